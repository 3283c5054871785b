/**
 * The TON test node (test/helpers/ton-node.ts) as a client of toncenter's v3 API sees it:
 * transactions executed by the TVM emulator (@ton/sandbox), grouped into masterchain blocks by the
 * facade, in ton-index-go's response shapes.
 */
import { Address, Cell, beginCell, internal, toNano } from "@ton/core";
import { startTonNode, type TonNode } from "./ton-node";
import { SHARD, rawAddress } from "./ton-facade";

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeNode = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

type J = Record<string, any>;

/**
 * The key sets of a real answer of toncenter's v3 API as published in the TON documentation
 * (github.com/ton-org/docs ecosystem/rpc/cookbook/traces.mdx, "Full output example": six mainnet
 * transactions of masterchain block 52372896), which are ton-index-go's `models.Transaction` /
 * `models.Message` fields. Newer ton-index-go builds add `finality`, `decoded_opcode`,
 * `extra_flags` and the address book's `interfaces`; the facade answers as the published example.
 */
const TX_FIELDS = ["account", "hash", "lt", "now", "mc_block_seqno", "trace_id", "prev_trans_hash", "prev_trans_lt", "orig_status", "end_status", "total_fees", "total_fees_extra_currencies", "description", "block_ref", "in_msg", "out_msgs", "account_state_before", "account_state_after", "emulated"];
const MSG_FIELDS = ["hash", "source", "destination", "value", "value_extra_currencies", "fwd_fee", "ihr_fee", "created_lt", "created_at", "opcode", "ihr_disabled", "bounce", "bounced", "import_fee", "message_content", "init_state"];
/** The example's wallet transaction (an external-in message): description keys, in order of the example. */
const ORD_DESCRIPTION_FIELDS = ["type", "aborted", "destroyed", "credit_first", "storage_ph", "compute_ph", "action"];
const VM_COMPUTE_FIELDS = ["skipped", "success", "msg_state_used", "account_activated", "gas_fees", "gas_used", "gas_limit", "gas_credit", "mode", "exit_code", "vm_steps", "vm_init_state_hash", "vm_final_state_hash"];
const ACTION_FIELDS = ["success", "valid", "no_funds", "status_change", "total_fwd_fees", "total_action_fees", "result_code", "tot_actions", "spec_actions", "skipped_actions", "msgs_created", "action_list_hash", "tot_msg_size"];
const BLOCK_FIELDS = ["workchain", "shard", "seqno", "root_hash", "file_hash", "global_id", "version", "after_merge", "before_split", "after_split", "want_merge", "want_split", "key_block", "vert_seqno_incr", "flags", "gen_utime", "start_lt", "end_lt", "validator_list_hash_short", "gen_catchain_seqno", "min_ref_mc_seqno", "prev_key_block_seqno", "vert_seqno", "master_ref_seqno", "rand_seed", "created_by", "tx_count", "masterchain_block_ref", "prev_blocks"];
const ACCOUNT_STATE_FIELDS = ["hash", "balance", "extra_currencies", "account_status", "frozen_hash", "data_hash", "code_hash"];
const B64_HASH = /^[A-Za-z0-9+/]{43}=$/;
const RAW = /^-?\d+:[0-9A-F]{64}$/;

function keys(o: J): string[] {
	return Object.keys(o).sort();
}

describeNode("TON test node (@ton/sandbox behind a toncenter v3 facade)", () => {
	let node: TonNode;

	beforeEach(async () => {
		node = await startTonNode();
	});
	afterEach(async () => {
		await node.stop();
	});

	const txsOf = async (seqno: number): Promise<{ transactions: J[]; address_book: J }> => {
		const r = await node.api<{ transactions: J[]; address_book: J }>(`/api/v3/transactionsByMasterchainBlock?seqno=${seqno}&limit=1000&sort=asc`);
		expect(r.status).toBe(200);
		return r.body;
	};

	it("masterchainInfo: first and last blocks in ton-index-go's Block shape; seal() advances the seqno", async () => {
		const a = await node.api<J>("/api/v3/masterchainInfo");
		expect(a.status).toBe(200);
		expect(keys(a.body)).toEqual(["first", "last"]);
		expect(keys(a.body.last)).toEqual([...BLOCK_FIELDS].sort());
		expect(a.body.last).toMatchObject({ workchain: -1, shard: SHARD, seqno: 1000, global_id: -239 });
		expect(a.body.last.root_hash).toMatch(B64_HASH);
		expect(typeof a.body.last.gen_utime).toBe("string");
		expect(typeof a.body.last.start_lt).toBe("string");

		const s1 = await node.seal();
		const s2 = await node.seal();
		expect([s1, s2]).toEqual([1001, 1002]);
		const b = await node.api<J>("/api/v3/masterchainInfo");
		expect(b.body.last.seqno).toBe(1002);
		expect(b.body.first.seqno).toBe(1000);
		expect(b.body.last.prev_blocks).toEqual([{ workchain: -1, shard: SHARD, seqno: 1001 }]);
		expect(BigInt(b.body.last.start_lt)).toBeGreaterThan(BigInt(a.body.last.end_lt) - 1n);

		const shards = await node.api<J>(`/api/v3/masterchainBlockShards?seqno=1002`);
		expect(shards.body.blocks.map((x: J) => [x.workchain, x.seqno, x.masterchain_block_ref.seqno])).toEqual([
			[-1, 1002, 1002],
			[0, shards.body.blocks[1].seqno, 1002],
		]);
		expect((await node.api(`/api/v3/transactionsByMasterchainBlock?seqno=1003`)).status).toBe(404);
		expect((await node.api(`/api/v3/transactionsByMasterchainBlock?seqno=1003`)).body).toEqual({ error: "masterchain block 1003 not found" });
	});

	it("a TON payment to an undeployed deposit: pending until sealed, then in the block with its messages, shard block reference and address book", async () => {
		const payer = await node.wallet({ balance: toNano("100") });
		const deposit = await node.wallet({ version: "v4" }); // not deployed: no balance, no contract
		const sent = await node.pay(payer, deposit.friendly, toNano("2.5"), { comment: "order 42" });
		expect(sent.txs).toHaveLength(2);
		expect(node.pendingCount()).toBe(2);
		// Not in any block yet: the indexer shows nothing.
		const before = await node.api<J>(`/api/v3/transactions?account=${deposit.friendly}&limit=10`);
		expect(before.body.transactions).toEqual([]);

		const seqno = await node.seal();
		expect(node.pendingCount()).toBe(0);
		const { transactions, address_book } = await txsOf(seqno);
		expect(transactions).toHaveLength(2);
		for (const t of transactions) {
			expect(keys(t)).toEqual([...TX_FIELDS].sort());
			expect(t.mc_block_seqno).toBe(seqno);
			expect(t.block_ref).toMatchObject({ workchain: 0, shard: SHARD });
			expect(t.account).toMatch(RAW);
			expect(t.hash).toMatch(B64_HASH);
			expect(keys(t.account_state_after)).toEqual([...ACCOUNT_STATE_FIELDS].sort());
			for (const m of [t.in_msg, ...t.out_msgs]) for (const f of MSG_FIELDS) expect(m).toHaveProperty(f);
		}
		const [walletTx, depositTx] = transactions;
		// The payer's wallet: an external message (no source, no value, import_fee, a normalized hash).
		expect(walletTx.account).toBe(rawAddress(payer.address));
		expect(walletTx.in_msg).toMatchObject({ source: null, value: null, created_lt: null, import_fee: "0" });
		expect(walletTx.in_msg.hash).toBe(sent.messageHash);
		expect(walletTx.in_msg.hash_norm).toBe(sent.messageHashNorm);
		expect(walletTx.description).toMatchObject({ type: "ord", aborted: false, compute_ph: { skipped: false, success: true, exit_code: 0 }, action: { success: true, result_code: 0 } });
		expect(keys(walletTx.description)).toEqual([...ORD_DESCRIPTION_FIELDS].sort());
		expect(keys(walletTx.description.compute_ph)).toEqual([...VM_COMPUTE_FIELDS].sort());
		expect(keys(walletTx.description.action)).toEqual([...ACTION_FIELDS].sort());
		expect(keys(walletTx.in_msg)).toEqual([...MSG_FIELDS, "hash_norm"].sort());
		expect(keys(walletTx.out_msgs[0])).toEqual([...MSG_FIELDS].sort());
		expect(walletTx.out_msgs).toHaveLength(1);
		expect(walletTx.out_msgs[0]).toMatchObject({ destination: rawAddress(deposit.address), value: "2500000000", bounce: false, bounced: false, opcode: "0x00000000" });

		// The deposit: as on the real chain, a message to an account without code skips the compute
		// phase (no_state) and the transaction is `aborted`, yet the value is credited and stays.
		expect(depositTx.account).toBe(rawAddress(deposit.address));
		expect(depositTx).toMatchObject({ orig_status: "nonexist", end_status: "uninit", trace_id: walletTx.hash });
		expect(depositTx.description).toMatchObject({ aborted: true, credit_ph: { credit: "2500000000" }, compute_ph: { skipped: true, reason: "no_state" } });
		expect(depositTx.description.bounce).toBeUndefined();
		expect(depositTx.in_msg).toMatchObject({ source: rawAddress(payer.address), value: "2500000000", bounce: false, bounced: false });
		expect(depositTx.in_msg.message_content.decoded).toEqual({ type: "text_comment", comment: "order 42" });
		expect(depositTx.in_msg.hash).toBe(walletTx.out_msgs[0].hash);
		expect(depositTx.account_state_after).toMatchObject({ balance: "2500000000", account_status: "uninit", code_hash: null });
		expect(node.balance(deposit.address)).toBe(2_500_000_000n);

		// Address book: wallet and undeployed account non-bounceable (UQ..), keyed by the raw form.
		expect(address_book[rawAddress(payer.address)]).toEqual({ user_friendly: payer.address.toString({ urlSafe: true, bounceable: false }), domain: null });
		expect(address_book[rawAddress(deposit.address)]).toEqual({ user_friendly: deposit.friendly, domain: null });

		// The same transactions through /transactions filters and by message hash.
		const byAccount = await node.api<J>(`/api/v3/transactions?account=${rawAddress(deposit.address)}`);
		expect(byAccount.body.transactions.map((t: J) => t.hash)).toEqual([depositTx.hash]);
		const byMc = await node.api<J>(`/api/v3/transactions?mc_seqno=${seqno}&sort=asc`);
		expect(byMc.body.transactions.map((t: J) => t.hash)).toEqual([walletTx.hash, depositTx.hash]);
		const byNorm = await node.api<J>(`/api/v3/transactionsByMessage?msg_hash=${encodeURIComponent(sent.messageHashNorm)}&direction=in`);
		expect(byNorm.body.transactions.map((t: J) => t.hash)).toEqual([walletTx.hash]);
		const hex = Buffer.from(walletTx.out_msgs[0].hash, "base64").toString("hex");
		const byOut = await node.api<J>(`/api/v3/transactionsByMessage?msg_hash=${hex}`);
		expect(byOut.body.transactions.map((t: J) => t.hash).sort()).toEqual([walletTx.hash, depositTx.hash].sort());
	});

	it("a bounceable payment to an undeployed address bounces back; a failed action phase aborts; a rejected external is refused", async () => {
		const payer = await node.wallet({ balance: toNano("10") });
		const nobody = await node.wallet();
		const sent = await node.pay(payer, nobody.address, toNano("1"), { bounce: true });
		expect(sent.txs).toHaveLength(3);
		const seqno = await node.seal();
		const { transactions } = await txsOf(seqno);
		const [, target, back] = transactions;
		expect(target.description).toMatchObject({ aborted: true, compute_ph: { skipped: true, reason: "no_state" }, bounce: { type: "ok" } });
		expect(target.out_msgs).toHaveLength(1);
		expect(target.out_msgs[0]).toMatchObject({ bounced: true, bounce: false, destination: rawAddress(payer.address), opcode: "0xffffffff" });
		expect(target.end_status).toBe("nonexist");
		expect(back.in_msg).toMatchObject({ bounced: true, source: rawAddress(nobody.address) });
		expect(BigInt(back.in_msg.value)).toBeLessThan(toNano("1"));
		expect(node.balance(nobody.address)).toBe(0n);

		// More than the balance with mode 1 (no IGNORE_ERRORS): the external is accepted (compute
		// succeeds, seqno moves), the action phase fails, the transaction is aborted, nothing is sent.
		const failed = await node.pay(payer, nobody.address, toNano("1000"), { sendMode: 1 });
		expect(failed.txs).toHaveLength(1);
		const f = failed.txs[0].json as J;
		expect(f.description).toMatchObject({ aborted: true, compute_ph: { success: true }, action: { success: false, no_funds: true, result_code: 37 } });
		expect(f.out_msgs).toEqual([]);

		// A replayed external (same seqno) is not accepted: POST /message answers 500 and nothing runs.
		const boc = await node.signedBoc(payer, [internal({ to: nobody.address, value: 1n, bounce: false })], { seqno: 0 });
		const pendingBefore = node.pendingCount();
		const r = await node.api<J>("/api/v3/message", { boc });
		expect(r.status).toBe(500);
		expect(r.body.error).toContain("External message was not accepted");
		expect(node.pendingCount()).toBe(pendingBefore);
	});

	it("POST /message runs the wallet's message; walletInformation, account and runGetMethod read the emulator's state", async () => {
		const payer = await node.wallet({ balance: toNano("10"), version: "v5" });
		const empty = await node.api<J>(`/api/v3/walletInformation?address=${(await node.wallet()).friendly}`);
		expect(empty.body).toEqual({ balance: "0", last_transaction_lt: "0", last_transaction_hash: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", status: "uninit" });

		const info0 = await node.api<J>(`/api/v3/walletInformation?address=${payer.friendly}`);
		expect(info0.body).toMatchObject({ balance: "10000000000", wallet_type: "wallet v5 r1", seqno: 0, status: "active" });
		const target = await node.wallet();
		const boc = await node.signedBoc(payer, [internal({ to: target.address, value: toNano("1"), bounce: false })]);
		const sent = await node.api<J>("/api/v3/message", { boc });
		expect(sent.status).toBe(200);
		expect(keys(sent.body)).toEqual(["message_hash", "message_hash_norm"]);
		const info1 = await node.api<J>(`/api/v3/walletInformation?address=${payer.address.toRawString()}`);
		expect(info1.body.seqno).toBe(1);
		expect(BigInt(info1.body.balance)).toBeLessThan(toNano("9"));

		const acc = await node.api<J>(`/api/v3/account?address=${target.friendly}`);
		expect(acc.body).toMatchObject({ balance: "1000000000", status: "uninit", code: null, data: null });

		const seq = await node.api<J>("/api/v3/runGetMethod", { address: payer.friendly, method: "seqno", stack: [] });
		expect(seq.body).toEqual({ gas_used: expect.any(Number), exit_code: 0, stack: [{ type: "num", value: "0x1" }] });
		const uninit = await node.api<J>("/api/v3/runGetMethod", { address: target.friendly, method: "seqno", stack: [] });
		expect(uninit.body).toEqual({ gas_used: 0, exit_code: -13, stack: [] });
	});

	it("jettons: mint, then a transfer to a deposit owner: its jetton wallet gets internal_transfer and the owner gets transfer_notification from that wallet; a look-alike master's wallet is another address", async () => {
		const usdt = await node.deployJetton({ symbol: "USDT", decimals: 6 });
		const fake = await node.deployJetton({ symbol: "USDT", decimals: 6 });
		const customer = await node.wallet({ balance: toNano("5") });
		await node.mint(usdt, customer.address, 100_000_000n);
		await node.mint(fake, customer.address, 100_000_000n);
		expect(await node.jettonBalance(usdt, customer.address)).toBe(100_000_000n);
		await node.seal();

		const deposit = await node.wallet(); // an undeployed deposit owner
		const depositJw = await node.jettonWalletAddress(usdt, deposit.address);
		const fakeJw = await node.jettonWalletAddress(fake, deposit.address);
		expect(depositJw.equals(fakeJw)).toBe(false);

		// get_wallet_address through the API, as a watcher asks the trusted master.
		const ga = await node.api<J>("/api/v3/runGetMethod", {
			address: usdt.master.toString(),
			method: "get_wallet_address",
			stack: [{ type: "slice", value: beginCell().storeAddress(deposit.address).endCell().toBoc().toString("base64") }],
		});
		expect(ga.body.exit_code).toBe(0);
		// As toncenter answers it: the slice comes back as a "cell" (ton-http-api renders slices as cells).
		expect(ga.body.stack).toEqual([{ type: "cell", value: expect.stringMatching(/^te6cck/) }]);
		expect(Cell.fromBase64(ga.body.stack[0].value).beginParse().loadAddress().equals(depositJw)).toBe(true);

		const t = await node.jettonTransfer(customer, usdt, deposit.address, 12_500_000n, { comment: "order 7" });
		const seqno = await node.seal();
		const { transactions, address_book } = await txsOf(seqno);
		expect(transactions.map(x => x.hash)).toEqual(t.txs.map(x => x.hash));
		const internalTransfer = transactions.find(x => x.account === rawAddress(depositJw))!;
		expect(internalTransfer.in_msg).toMatchObject({ opcode: "0x178d4519", source: rawAddress(await node.jettonWalletAddress(usdt, customer.address)) });
		expect(internalTransfer.description).toMatchObject({ aborted: false, compute_ph: { success: true }, action: { success: true } });
		expect(internalTransfer.orig_status).toBe("nonexist");
		expect(internalTransfer.end_status).toBe("active");
		const notification = transactions.find(x => x.account === rawAddress(deposit.address))!;
		expect(notification.in_msg).toMatchObject({ opcode: "0x7362d09c", source: rawAddress(depositJw) });
		// transfer_notification: query_id, amount, sender, forward_payload (Either: the comment inline).
		const body = Cell.fromBase64(notification.in_msg.message_content.body).beginParse();
		expect(body.loadUint(32)).toBe(0x7362d09c);
		body.loadUintBig(64);
		expect(body.loadCoins()).toBe(12_500_000n);
		expect(body.loadAddress().equals(customer.address)).toBe(true);
		expect(address_book[rawAddress(depositJw)].user_friendly).toBe(depositJw.toString({ urlSafe: true, bounceable: true }));
		expect(await node.jettonBalance(usdt, deposit.address)).toBe(12_500_000n);
		expect(await node.jettonBalance(fake, deposit.address)).toBe(0n);
		expect(await node.jettonBalance(usdt, customer.address)).toBe(87_500_000n);

		const data = await node.api<J>("/api/v3/runGetMethod", { address: depositJw.toString(), method: "get_wallet_data", stack: [] });
		expect(data.body.stack.map((e: J) => e.type)).toEqual(["num", "cell", "cell", "cell"]);
		expect(BigInt(data.body.stack[0].value)).toBe(12_500_000n);
	});

	it("jettons with forward_ton_amount 0: the recipient's jetton wallet gets internal_transfer in its masterchain block, the owner nothing; get_jetton_data gives the wallet code", async () => {
		const usdt = await node.deployJetton({ symbol: "USDT", decimals: 6 });
		const customer = await node.wallet({ balance: toNano("5") });
		await node.mint(usdt, customer.address, 100_000_000n);
		await node.seal();
		const deposit = await node.wallet();
		const depositJw = await node.jettonWalletAddress(usdt, deposit.address);
		const t = await node.jettonTransfer(customer, usdt, deposit.address, 3_000_000n, { forwardTonAmount: 0n });
		const seqno = await node.seal();
		const { transactions } = await txsOf(seqno);
		expect(transactions.map(x => x.hash)).toEqual(t.txs.map(x => x.hash));
		// No notification: the owner has no transaction; the credit is the jetton wallet's internal_transfer.
		expect(transactions.some(x => x.account === rawAddress(deposit.address))).toBe(false);
		const credit = transactions.find(x => x.account === rawAddress(depositJw))!;
		expect(credit.in_msg).toMatchObject({ opcode: "0x178d4519", source: rawAddress(await node.jettonWalletAddress(usdt, customer.address)) });
		expect(credit.description).toMatchObject({ aborted: false, compute_ph: { skipped: false, success: true }, action: { success: true } });
		const body = Cell.fromBase64(credit.in_msg.message_content.body).beginParse();
		expect(body.loadUint(32)).toBe(0x178d4519);
		body.loadUintBig(64);
		expect(body.loadCoins()).toBe(3_000_000n);
		expect(await node.jettonBalance(usdt, deposit.address)).toBe(3_000_000n);

		// get_jetton_data: total_supply, mintable, admin, content, wallet_code, as toncenter's stack entries.
		const jd = await node.api<J>("/api/v3/runGetMethod", { address: usdt.master.toString(), method: "get_jetton_data", stack: [] });
		expect(jd.body.exit_code).toBe(0);
		expect(jd.body.stack.map((e: J) => e.type)).toEqual(["num", "num", "cell", "cell", "cell"]);
		expect(BigInt(jd.body.stack[0].value)).toBe(100_000_000n);
		const walletCode = Cell.fromBase64(jd.body.stack[4].value);
		// The code the recipient's jetton wallet was deployed with.
		const state = (await node.facade.exclusive(() => node.facade.blockchain.getContract(depositJw))).accountState;
		expect(state?.type).toBe("active");
		expect(state?.type === "active" && state.state.code?.hash().equals(walletCode.hash())).toBe(true);
	});

	it("rollback: a sealed block disappears, its seqno is re-used by different content, the emulator's accounts are as before", async () => {
		const payer = await node.wallet({ balance: toNano("10") });
		const a = await node.wallet();
		const b = await node.wallet();
		await node.seal();
		const cp = await node.checkpoint();
		await node.pay(payer, a.address, toNano("1"));
		const seqno = await node.seal();
		const first = await txsOf(seqno);
		expect(first.transactions.some(t => t.account === rawAddress(a.address))).toBe(true);
		expect(node.balance(a.address)).toBe(toNano("1"));

		await node.rollback(cp);
		expect(node.lastSeqno()).toBe(seqno - 1);
		expect((await node.api(`/api/v3/transactionsByMasterchainBlock?seqno=${seqno}`)).status).toBe(404);
		expect(node.balance(a.address)).toBe(0n);
		expect(await node.seqno(payer)).toBe(0);

		await node.pay(payer, b.address, toNano("2"));
		expect(await node.seal()).toBe(seqno);
		const second = await txsOf(seqno);
		expect(second.transactions.some(t => t.account === rawAddress(a.address))).toBe(false);
		expect(second.transactions.some(t => t.account === rawAddress(b.address))).toBe(true);
		expect(second.transactions[0].hash).not.toBe(first.transactions[0].hash);
		const info = await node.api<J>("/api/v3/masterchainInfo");
		expect(info.body.last.seqno).toBe(seqno);
	});

	it("hopBlocks: each hop of a trace lands one block later, as on the real chain", async () => {
		node.setHopBlocks(1);
		const payer = await node.wallet({ balance: toNano("10") });
		const nobody = await node.wallet();
		const sent = await node.pay(payer, nobody.address, toNano("1"), { bounce: true }); // wallet -> nobody -> bounce back
		expect(sent.txs.map(t => t.depth)).toEqual([0, 1, 2]);
		const s1 = await node.seal();
		const s2 = await node.seal();
		const s3 = await node.seal();
		expect(node.pendingCount()).toBe(0);
		const [b1, b2, b3] = await Promise.all([txsOf(s1), txsOf(s2), txsOf(s3)]);
		expect(b1.transactions.map(t => t.hash)).toEqual([sent.txs[0].hash]);
		expect(b2.transactions.map(t => t.hash)).toEqual([sent.txs[1].hash]);
		expect(b3.transactions.map(t => t.hash)).toEqual([sent.txs[2].hash]);
		expect(b3.transactions[0].in_msg.bounced).toBe(true);
	});

	it("externals 'drop' and 'defer': POST /message checks and answers the hashes; a dropped message never runs, a deferred one past valid_until is refused at its turn", async () => {
		const payer = await node.wallet({ balance: toNano("10") });
		const target = await node.wallet();
		const before = node.balance(payer.address);

		node.setExternals("drop");
		const boc = await node.signedBoc(payer, [internal({ to: target.address, value: toNano("1"), bounce: false })], { timeout: 30 });
		const r = await node.api<J>("/api/v3/message", { boc });
		expect(r.status).toBe(200);
		expect(node.pendingCount()).toBe(0);
		await node.settle();
		expect(node.balance(payer.address)).toBe(before);
		expect(await node.seqno(payer)).toBe(0);
		expect(node.lost()).toEqual([r.body.message_hash]);
		const found = await node.api<J>(`/api/v3/transactionsByMessage?msg_hash=${encodeURIComponent(r.body.message_hash)}`);
		expect(found.body.transactions).toEqual([]);
		// The check still refuses what the wallet would not accept (a bad seqno).
		const bad = await node.signedBoc(payer, [internal({ to: target.address, value: 1n, bounce: false })], { seqno: 5 });
		expect((await node.api("/api/v3/message", { boc: bad })).status).toBe(500);

		node.setExternals("defer");
		const late = await node.signedBoc(payer, [internal({ to: target.address, value: toNano("1"), bounce: false })], { timeout: 30 });
		expect((await node.api("/api/v3/message", { boc: late })).status).toBe(200);
		node.advanceTime(60); // past valid_until before its turn: the wallet refuses it then
		await node.settle();
		expect(await node.seqno(payer)).toBe(0);
		expect(node.lost()).toHaveLength(2);

		const ok = await node.signedBoc(payer, [internal({ to: target.address, value: toNano("1"), bounce: false })], { timeout: 30 });
		const accepted = await node.api<J>("/api/v3/message", { boc: ok });
		expect(node.pendingCount()).toBe(0); // not run yet
		const seqno = await node.seal();
		const { transactions } = await txsOf(seqno);
		expect(transactions[0].in_msg.hash).toBe(accepted.body.message_hash);
		expect(node.balance(target.address)).toBe(toNano("1"));
	});

	it("payMany: 300 payments from a v5R1 wallet in two external messages, each a transaction of its own; a wallet emptied with mode 128+32 is destroyed", async () => {
		const payer = await node.wallet({ version: "v5", balance: toNano("100") });
		const deposits = await Promise.all(Array.from({ length: 300 }, () => node.wallet()));
		const sent = await node.payMany(payer, deposits.map((d, i) => ({ to: d.address, amount: BigInt(1_000_000 + i), comment: `p${i}` })));
		expect(sent.map(x => x.txs.length)).toEqual([256, 46]);
		const seqno = await node.seal();
		const { transactions } = await txsOf(seqno);
		expect(transactions).toHaveLength(302);
		const credited = new Map(transactions.filter(t => t.in_msg.source === rawAddress(payer.address)).map(t => [t.account, t.in_msg.value]));
		deposits.forEach((d, i) => expect(credited.get(rawAddress(d.address))).toBe(String(1_000_000 + i)));

		// A v4R2 wallet sending everything with mode 128 + 32 is destroyed (end_status nonexist).
		const v4 = await node.wallet({ balance: toNano("3") });
		const s = await node.send(v4, [internal({ to: payer.address, value: 0n, bounce: false })], { sendMode: 128 + 32 });
		const own = s.txs[0].json as J;
		expect(own.description).toMatchObject({ aborted: false, destroyed: true, action: { success: true, status_change: "deleted" } });
		expect(own.end_status).toBe("nonexist");
		expect(node.status(v4.address)).toBe("nonexist");
		await node.seal();
		const acc = await node.api<J>(`/api/v3/account?address=${v4.friendly}`);
		expect(acc.body).toMatchObject({ balance: "0", status: "nonexist", code: null });
		// ton-index-go's walletInformation: an indexed account that is neither a wallet nor uninit is "not a wallet".
		const wi = await node.api<J>(`/api/v3/walletInformation?address=${v4.friendly}`);
		expect(wi).toEqual({ status: 409, body: { error: "not a wallet" } });
	}, 240_000); // 300 emulated transactions: ~55 s alone, past 60 s on a loaded machine

	it("traces and adjacentTransactions: the jetton transfer's trace as ton-index-go's Trace; a forged notification comes from the attacker's wallet, not a jetton wallet", async () => {
		const usdt = await node.deployJetton();
		const customer = await node.wallet({ balance: toNano("5") });
		await node.mint(usdt, customer.address, 50_000_000n);
		const deposit = await node.wallet();
		node.setHopBlocks(1);
		const t = await node.jettonTransfer(customer, usdt, deposit.address, 1_000_000n);
		const first = await node.seal();
		// Part of the trace is sealed: the trace is pending.
		const partial = await node.api<J>(`/api/v3/traces?tx_hash=${encodeURIComponent(t.txs[0].hash)}`);
		expect(partial.body.traces[0].trace_info).toMatchObject({ trace_state: "pending", transactions: 1 });
		const last = await node.settle();
		const r = await node.api<J>(`/api/v3/traces?msg_hash=${encodeURIComponent(t.messageHashNorm)}`);
		expect(r.status).toBe(200);
		expect(keys(r.body)).toEqual(["address_book", "metadata", "traces"]);
		const trace = r.body.traces[0];
		// Keys of the trace in the published answer (ton-org/docs cookbook/traces.mdx).
		expect(keys(trace)).toEqual(["end_lt", "end_utime", "external_hash", "is_incomplete", "mc_seqno_end", "mc_seqno_start", "start_lt", "start_utime", "trace", "trace_id", "trace_info", "transactions", "transactions_order"]);
		expect(trace).toMatchObject({ trace_id: t.txs[0].hash, external_hash: t.messageHash, mc_seqno_start: String(first), mc_seqno_end: String(last), is_incomplete: false });
		expect(trace.trace_info).toEqual({ trace_state: "complete", messages: 5, transactions: 5, pending_messages: 0, classification_state: "unclassified" });
		expect(trace.transactions_order).toEqual(t.txs.map(x => x.hash).sort((a, b) => (BigInt(trace.transactions[a].lt) < BigInt(trace.transactions[b].lt) ? -1 : 1)));
		expect(trace.trace.tx_hash).toBe(t.txs[0].hash);
		expect(trace.trace.children).toHaveLength(1); // the customer's jetton wallet
		expect(trace.trace.children[0].children).toHaveLength(1); // the deposit's jetton wallet
		expect(trace.trace.children[0].children[0].children).toHaveLength(2); // notification + excesses
		// adjacentTransactions: the deposit's jetton wallet's transaction and the ones its out messages made.
		const depositJw = rawAddress(await node.jettonWalletAddress(usdt, deposit.address));
		const jwTx = Object.values(trace.transactions as Record<string, J>).find(x => x.account === depositJw)!;
		const children = await node.api<J>(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(jwTx.hash)}&direction=out`);
		expect(children.body.transactions.map((x: J) => x.account).sort()).toEqual([rawAddress(deposit.address), rawAddress(customer.address)].sort());
		const parent = await node.api<J>(`/api/v3/adjacentTransactions?hash=${encodeURIComponent(jwTx.hash)}&direction=in`);
		expect(parent.body.transactions.map((x: J) => x.account)).toEqual([rawAddress(await node.jettonWalletAddress(usdt, customer.address))]);

		// A forged notification: same op and layout, but the source is the attacker's wallet.
		node.setHopBlocks(0);
		const attacker = await node.wallet({ balance: toNano("1") });
		const forged = await node.forgedNotification(attacker, deposit.address, 1_000_000_000n, { claimedSender: customer.address });
		const seqno = await node.seal();
		const got = (await txsOf(seqno)).transactions.find(x => x.account === rawAddress(deposit.address))!;
		expect(got.hash).toBe(forged.txs[1].hash);
		expect(got.in_msg).toMatchObject({ opcode: "0x7362d09c", source: rawAddress(attacker.address) });
		expect(got.in_msg.source).not.toBe(depositJw);
	});

	it("testnet: address book forms and global_id of testnet", async () => {
		const t = await startTonNode({ testnet: true });
		try {
			const payer = await t.wallet({ balance: toNano("2") });
			const to = await t.wallet();
			await t.pay(payer, to.address, toNano("1"));
			const seqno = await t.seal();
			const r = await t.api<J>(`/api/v3/transactionsByMasterchainBlock?seqno=${seqno}`);
			expect(r.body.address_book[rawAddress(to.address)].user_friendly).toBe(to.address.toString({ urlSafe: true, bounceable: false, testOnly: true }));
			expect(r.body.address_book[rawAddress(to.address)].user_friendly).toMatch(/^0Q/);
			expect((await t.api<J>("/api/v3/masterchainInfo")).body.last.global_id).toBe(-3);
		} finally {
			await t.stop();
		}
	});

	it("query parameters as ton-index-go checks them: limit, offset, sort, bad values", async () => {
		const payer = await node.wallet({ balance: toNano("10") });
		for (let i = 0; i < 3; i++) await node.pay(payer, (await node.wallet()).address, toNano("0.1"));
		const seqno = await node.seal();
		const all = (await txsOf(seqno)).transactions;
		expect(all).toHaveLength(6);
		const lts = all.map(t => BigInt(t.lt));
		expect([...lts].sort((x, y) => (x < y ? -1 : 1))).toEqual(lts);
		const desc = await node.api<J>(`/api/v3/transactionsByMasterchainBlock?seqno=${seqno}&limit=2&offset=1`);
		expect(desc.body.transactions.map((t: J) => t.hash)).toEqual([all[4].hash, all[3].hash]);
		const dflt = await node.api<J>(`/api/v3/transactions?limit=1001`);
		expect(dflt.status).toBe(422);
		expect(dflt.body).toEqual({ error: "limit is not allowed: 1001 > 1000" });
		expect((await node.api(`/api/v3/transactions?sort=up`)).status).toBe(422);
		expect((await node.api(`/api/v3/transactionsByMessage`)).status).toBe(422);
		expect((await node.api<J>(`/api/v3/walletInformation?address=${Address.parse(node.faucet.friendly).toRawString()}`)).body.wallet_type).toBe("wallet v4 r2");
		// List parameters repeated or comma-separated, as fiber parses them.
		const two = [all[1].account, all[3].account];
		const both = await node.api<J>(`/api/v3/transactions?account=${two.join(",")}&sort=asc`);
		const repeated = await node.api<J>(`/api/v3/transactions?account=${two[0]}&account=${two[1]}&sort=asc`);
		expect(both.body.transactions.map((t: J) => t.hash)).toEqual([all[1].hash, all[3].hash]);
		expect(repeated.body).toEqual(both.body);
		// A masterchain block header the way a watcher asks for it; the shard in hex or signed decimal.
		for (const shard of ["8000000000000000", "-9223372036854775808"]) {
			const h = await node.api<J>(`/api/v3/blocks?workchain=-1&shard=${shard}&seqno=${seqno}&limit=1`);
			expect(h.body.blocks.map((b: J) => [b.workchain, b.seqno, b.tx_count])).toEqual([[-1, seqno, 0]]);
		}
		expect((await node.api<J>(`/api/v3/blocks?workchain=-1&shard=4000000000000000&seqno=${seqno}`)).body.blocks).toEqual([]);
		expect((await node.api<J>(`/api/v3/blocks?workchain=0&seqno=${all[0].block_ref.seqno}`)).body.blocks[0]).toMatchObject({ workchain: 0, tx_count: 6, master_ref_seqno: seqno });
	});
});
