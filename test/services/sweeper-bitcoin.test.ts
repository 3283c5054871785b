/**
 * The UTXO sweeper on a real litecoind -regtest: settled payments of a merchant (one of them two
 * outputs in one transaction) are consolidated into ONE output at the merchant's withdrawal
 * address; the node's view of the deposits and the destination matches the ledger. Then the
 * merchant's wallet spends a sweep's output before the sweep has its required confirmations (2 on
 * litecoin-regtest, no -txindex): it is confirmed from its own transaction, once, nothing is sent
 * again.
 */
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { startLitecoind, type Litecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import type { UserWithToken } from "../helpers/users";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");

describe("UTXO sweeper on a real litecoind -regtest", () => {
	let ltc: Litecoind;
	let node: TestNode;
	let user: UserWithToken;
	let key: { key: string; secret: string };
	let destination: string;

	beforeAll(async () => {
		ltc = await startLitecoind();
		destination = await ltc.wallet<string>("getnewaddress", ["merchant", "bech32"]);
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-bitcoin", "withdrawals", "sweeper-bitcoin"],
			env: { RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl, WATCHER_POLL_MS: "50", SWEEP_POLL_MS: "200", SWEEP_LEASE_MS: "2000" },
		});
		({ user, key } = await sandboxMerchant(node));
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await ltc?.stop();
	});

	async function paidCheckout(amount: string, pay: (address: string) => Promise<unknown>) {
		const opened = await openCheckout(node, key, { amount, currency: "ltc", tokenId: LTC, networkId: NET });
		await pay(opened.address);
		return { id: opened.txId, depositAddress: opened.address };
	}

	/** One transaction paying `address` twice (two outputs). */
	async function payTwice(address: string, amount: string): Promise<string> {
		const one = await ltc.rpc<string>("createrawtransaction", [[], [{ [address]: amount }]]);
		const output = one.slice(12, one.length - 8);
		const two = `${one.slice(0, 8)}0002${output}${output}${one.slice(-8)}`;
		const funded = await ltc.wallet<{ hex: string }>("fundrawtransaction", [two]);
		const signed = await ltc.wallet<{ hex: string }>("signrawtransactionwithwallet", [funded.hex]);
		return ltc.rpc<string>("sendrawtransaction", [signed.hex]);
	}

	it("consolidates a merchant's settled deposit outputs into one output at the settings address; the ledger matches the node", async () => {
		const a = await paidCheckout("0.3", to => ltc.wallet("sendtoaddress", [to, "0.3"]));
		const b = await paidCheckout("0.5", to => payTwice(to, "0.25"));
		await ltc.mine(3);
		for (const c of [a, b]) await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.id}`)).body.status === "completed", 30_000);
		// Nothing moves before the merchant says where.
		await new Promise(r => setTimeout(r, 600));
		expect(await node.app.models.Sweep.count()).toBe(0);
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { litecoin: destination } } })).status).toBe(200);

		// One consolidation per merchant and destination; a step that saw the settings appear half-way
		// may split it in two, never more than the deposits, never with change.
		const first = await until("sweep broadcast", async () => node.app.models.Sweep.findOne({ where: { kind: "utxo", status: "broadcast" } }), 30_000);
		const entry = await ltc.rpc<{ "bip125-replaceable": boolean }>("getmempoolentry", [first.txHash]);
		expect(entry["bip125-replaceable"]).toBe(true);
		const sweptAll = async () => {
			await ltc.mine(1);
			const sweeps = await node.app.models.Sweep.findAll({ where: { kind: "utxo" } });
			return sweeps.length > 0 && sweeps.every(s => s.status === "confirmed") && (await node.app.models.SweepItem.count({ where: { sweepId: sweeps.map(s => s.id) } })) === 2 ? sweeps : null;
		};
		const sweeps = await until("every deposit swept and confirmed", sweptAll, 60_000);
		let inputs = 0;
		let fees = 0n;
		for (const s of sweeps) {
			const decoded = await ltc.rpc<{ vin: unknown[]; vout: unknown[] }>("decoderawtransaction", [s.rawTx]);
			expect(decoded.vout).toHaveLength(1); // no change at a deposit address
			inputs += decoded.vin.length;
			fees += BigInt(s.feePaid!);
		}
		expect(inputs).toBe(3); // 0.3 + the two outputs of 0.25
		expect(sweeps.length).toBeLessThanOrEqual(2);
		// The node answers a JSON number with at most 8 decimals: toFixed(8) gives it back exactly.
		const received = money((await ltc.wallet<number>("getreceivedbyaddress", [destination, 1])).toFixed(8));
		expect(received.plus(money(fees.toString()).div(100_000_000)).eq(money("0.8"))).toBe(true);
		// The deposits hold nothing on the node, and the ledger's balance for the merchant is zero.
		for (const c of [a, b]) {
			const utxos = await ltc.rpc<{ unspents: unknown[] }>("scantxoutset", ["start", [`addr(${c.depositAddress})`]]);
			expect(utxos.unspents).toHaveLength(0);
		}
		await until("ledger at zero", async () => money(((await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId: LTC })) as { balance: string }).balance).isZero(), 10_000);
		// Swept once: later steps plan nothing.
		await new Promise(r => setTimeout(r, 800));
		expect(await node.app.models.Sweep.count()).toBe(sweeps.length);
	}, 160_000);

	it("confirms a sweep once from its own transaction after the destination spent its output; the ledger equals the node", async () => {
		// (The settings saved above stay: the merchant's destination is a wallet address of this node.)
		const c = await openCheckout(node, key, { amount: "0.3", currency: "ltc", tokenId: LTC, networkId: NET });
		await ltc.wallet("sendtoaddress", [c.address, "0.3"]);
		await ltc.mine(2);
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
		const item = await until("swept", async () => node.app.models.SweepItem.findOne({ where: { transactionId: c.txId } }), 30_000);
		const sent = await until("sweep broadcast", async () => node.app.models.Sweep.findOne({ where: { id: item.sweepId, status: "broadcast" } }), 30_000);

		// The merchant's wallet spends the sweep's output at once (a child of the unconfirmed sweep), then both are mined.
		const sweepTx = await ltc.rpc<{ vout: Array<{ value: number }> }>("getrawtransaction", [sent.txHash, true]);
		const onward = await ltc.wallet<string>("getnewaddress", ["onward", "bech32"]);
		const raw = await ltc.rpc<string>("createrawtransaction", [[{ txid: sent.txHash, vout: 0 }], [{ [onward]: (sweepTx.vout[0].value - 0.001).toFixed(8) }]]);
		const signed = await ltc.wallet<{ hex: string; complete: boolean }>("signrawtransactionwithwallet", [raw]);
		expect(signed.complete).toBe(true);
		await ltc.rpc<string>("sendrawtransaction", [signed.hex]);
		await ltc.mine(1);
		expect(await ltc.rpc("gettxout", [sent.txHash, 0, true])).toBeNull();

		// One more block gives the sweep its 2 confirmations; its output is long spent.
		await ltc.mine(1);
		const confirmed = await until("sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { id: sent.id, status: "confirmed" } }), 60_000);
		expect({ txHash: confirmed.txHash, hashes: confirmed.hashes }).toEqual({ txHash: sent.txHash, hashes: [sent.txHash] });
		expect(await node.app.models.SweepItem.count({ where: { transactionId: c.txId } })).toBe(1);
		// What the deposit sent = what reached the destination + the fee.
		const output = money(sweepTx.vout[0].value.toFixed(8));
		expect(output.plus(money(confirmed.feePaid!).div(100_000_000)).eq(money("0.3"))).toBe(true);
		const utxos = await ltc.rpc<{ unspents: unknown[] }>("scantxoutset", ["start", [`addr(${c.address})`]]);
		expect(utxos.unspents).toHaveLength(0);
		await until("ledger at zero", async () => money(((await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId: LTC })) as { balance: string }).balance).isZero(), 10_000);
	}, 180_000);
});
