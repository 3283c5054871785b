/**
 * A TON test node for a test file: toncenter's v3 indexer API (the subset a payment watcher and a
 * sweeper use) on a free loopback port, over @ton/sandbox (the real TVM emulator), plus the
 * scenario helpers a test needs: funded v4R2 / v5R1 wallets, TON payments (bounceable or not,
 * bounced, failed), a jetton minter and wallets from @ton-community/assets-sdk (the reference
 * TEP-74 code, not the exact USDT-on-TON contract), blocks sealed on demand or on an interval, and
 * rollback to a checkpoint. Engine and what is real versus invented: test/helpers/ton-facade.ts.
 *
 * In-process: the emulator is WASM and well-behaved, and every call on it is serialized by the
 * facade; the HTTP server shares the test's event loop (tests await, they never block it).
 */
import crypto from "node:crypto";
import { Address, Cell, SendMode, beginCell, internal, storeMessage, external, toNano, type MessageRelaxed, type StateInit } from "@ton/core";
import { keyPairFromSeed, type KeyPair } from "@ton/crypto";
import { WalletContractV4, WalletContractV5R1 } from "@ton/ton";
import { createShardAccount } from "@ton/sandbox";
import { JettonMinter } from "@ton-community/assets-sdk/dist/jetton/JettonMinter";
import { storeJettonMintMessage } from "@ton-community/assets-sdk/dist/jetton/types/JettonMintMessage";
import { storeJettonTransferMessage } from "@ton-community/assets-sdk/dist/jetton/types/JettonTransferMessage";
import { internalOnchainContentToCell } from "@ton-community/assets-sdk/dist/utils";
import { TonFacade, rawAddress, type Checkpoint, type ExternalsMode, type TonFacadeOptions, type TxRecord } from "./ton-facade";

export type WalletVersion = "v4" | "v5";

export interface TestWallet {
	version: WalletVersion;
	address: Address;
	keyPair: KeyPair;
	contract: WalletContractV4 | WalletContractV5R1;
	/** Non-bounceable user-friendly form (what a pay page shows for a wallet). */
	friendly: string;
}

export interface Jetton {
	master: Address;
	admin: TestWallet;
	symbol: string;
	decimals: number;
}

export interface Sent {
	/** What POST /api/v3/message answered. */
	messageHash: string;
	messageHashNorm: string;
	/** The transactions the message's trace produced (pending until the next seal). */
	txs: TxRecord[];
}

export interface SendOptions {
	sendMode?: number;
	/** Seconds from the node's clock the signed message is valid (default 60). */
	timeout?: number;
}

export interface TonNode {
	url: string;
	facade: TonFacade;
	testnet: boolean;
	/** A v4R2 wallet holding 1,000,000 TON from genesis; pays for the helpers below. */
	faucet: TestWallet;
	/** Seals the pending transactions into the next masterchain block; returns its seqno. */
	seal(): Promise<number>;
	/** Seals until nothing is pending (deferred externals run, every hop of every trace sealed); returns the last seqno. */
	settle(): Promise<number>;
	/** Seals a block every `ms` (null: stop). */
	autoSeal(ms: number | null): void;
	/** Blocks between the hops of a trace (0: a whole trace in one block). */
	setHopBlocks(n: number): void;
	/** What POST /api/v3/message does: "execute" (default), "defer" (run at the next seal), "drop" (accepted, never run). */
	setExternals(mode: ExternalsMode): void;
	/** Hashes of external messages answered by POST /message that never ran (dropped, or refused when their deferred turn came). */
	lost(): string[];
	lastSeqno(): number;
	/** Transactions executed, not yet in a masterchain block. */
	pendingCount(): number;
	checkpoint(): Promise<Checkpoint>;
	rollback(cp: Checkpoint): Promise<void>;
	advanceTime(seconds: number): void;
	/** A wallet key pair (random unless `seed`, 32 bytes). */
	keyPair(seed?: Buffer): KeyPair;
	/** A wallet's contract and address; `balance` > 0: deployed and funded at genesis (no transaction). */
	wallet(opts?: { version?: WalletVersion; keyPair?: KeyPair; balance?: bigint }): Promise<TestWallet>;
	/** Signs an external message for `from` (state init included while it is not active) and posts it. */
	send(from: TestWallet, messages: MessageRelaxed[], opts?: SendOptions): Promise<Sent>;
	/** The signed external message BOC (base64) `send` would post, without posting it. */
	signedBoc(from: TestWallet, messages: MessageRelaxed[], opts?: SendOptions & { seqno?: number }): Promise<string>;
	/**
	 * Pays TON. `bounce` defaults to the flag of `to` when given as a user-friendly string, else
	 * false. A bounceable payment to an address without a contract bounces back (less fees).
	 */
	pay(from: TestWallet, to: Address | string, amount: bigint, opts?: SendOptions & { bounce?: boolean; comment?: string; body?: Cell; init?: StateInit }): Promise<Sent>;
	/**
	 * Many TON payments from one wallet, as few external messages as its version allows (v5R1: 255
	 * a message, v4R2: 4), each payment a real transaction of its own; returns the sends in order.
	 * The emulator runs some hundreds of transactions a second on an idle core.
	 */
	payMany(from: TestWallet, payments: { to: Address; amount: bigint; bounce?: boolean; comment?: string }[], opts?: SendOptions): Promise<Sent[]>;
	/** A jetton minter (assets-sdk reference code) deployed by `admin` (default: a new funded wallet), on-chain metadata with `symbol`. */
	deployJetton(opts?: { symbol?: string; decimals?: number; name?: string; admin?: TestWallet }): Promise<Jetton>;
	/**
	 * The same reference minter placed at a given `master` address (e.g. the catalogue's USDT master,
	 * the one the watcher and the sweeper trust), its admin a new funded wallet; no transaction.
	 */
	placeJetton(master: Address, opts?: { symbol?: string; decimals?: number; name?: string }): Promise<Jetton>;
	/** Mints `amount` base units to `owner`'s jetton wallet (created on first mint). */
	mint(jetton: Jetton, owner: Address, amount: bigint): Promise<Sent>;
	/**
	 * A TEP-74 transfer of `amount` from `from`'s jetton wallet to `toOwner`: the recipient's jetton
	 * wallet gets internal_transfer and, with `forwardTonAmount` > 0 (default 0.01 TON), `toOwner`
	 * gets transfer_notification from it; excesses go to `responseTo` (default: `from`).
	 */
	jettonTransfer(from: TestWallet, jetton: Jetton, toOwner: Address, amount: bigint, opts?: SendOptions & { forwardTonAmount?: bigint; comment?: string; value?: bigint; responseTo?: Address | null }): Promise<Sent>;
	/**
	 * A transfer_notification (op 0x7362d09c) that no jetton wallet sent: `from` (any wallet, e.g. an
	 * attacker's) sends it straight to `toOwner`, claiming `amount` from `claimedSender`.
	 */
	forgedNotification(from: TestWallet, toOwner: Address, amount: bigint, opts?: { claimedSender?: Address; comment?: string; value?: bigint }): Promise<Sent>;
	jettonWalletAddress(jetton: Jetton | Address, owner: Address): Promise<Address>;
	/** Base units in `owner`'s jetton wallet (0 when it does not exist). */
	jettonBalance(jetton: Jetton | Address, owner: Address): Promise<bigint>;
	/** TON balance (nanotons) as the emulator holds it now. */
	balance(address: Address): bigint;
	/** Account status as the API reports it. */
	status(address: Address): "active" | "uninit" | "frozen" | "nonexist";
	/** A wallet's seqno (0 while not deployed). */
	seqno(wallet: TestWallet): Promise<number>;
	/** GET/POST an API path, e.g. `api("/api/v3/masterchainInfo")`; answers status and JSON. */
	api<T = Record<string, unknown>>(path: string, body?: unknown): Promise<{ status: number; body: T }>;
	stop(): Promise<void>;
}

export interface TonNodeOptions extends TonFacadeOptions {}

function friendlyOf(a: Address, testnet: boolean, bounceable = false): string {
	return a.toString({ urlSafe: true, bounceable, testOnly: testnet });
}

export async function startTonNode(opts: TonNodeOptions = {}): Promise<TonNode> {
	const facade = await TonFacade.create(opts);
	const url = await facade.listen();
	const testnet = facade.testnet;
	const bc = facade.blockchain;
	const globalId = testnet ? -3 : -239;
	// The facade sees every transaction the emulator runs, so its pending list grows by exactly the trace.
	const collect = async (fn: () => Promise<{ message_hash: string; message_hash_norm: string }>): Promise<Sent> => {
		const before = facade.pending.length;
		const r = await fn();
		return { messageHash: r.message_hash, messageHashNorm: r.message_hash_norm, txs: facade.pending.slice(before) };
	};

	const keyPair = (seed?: Buffer) => keyPairFromSeed(seed ?? crypto.randomBytes(32));
	const contractFor = (version: WalletVersion, kp: KeyPair) =>
		version === "v5"
			? WalletContractV5R1.create({ publicKey: kp.publicKey, walletId: { networkGlobalId: globalId, context: { walletVersion: "v5r1", workchain: 0, subwalletNumber: 0 } } })
			: WalletContractV4.create({ workchain: 0, publicKey: kp.publicKey });

	const wallet: TonNode["wallet"] = async (o = {}) => {
		const version = o.version ?? "v4";
		const kp = o.keyPair ?? keyPair();
		const contract = contractFor(version, kp);
		if (o.balance && o.balance > 0n) {
			await facade.exclusive(() => bc.setShardAccount(contract.address, createShardAccount({ address: contract.address, code: contract.init.code, data: contract.init.data, balance: o.balance!, workchain: 0 })));
		}
		return { version, address: contract.address, keyPair: kp, contract, friendly: friendlyOf(contract.address, testnet) };
	};

	const seqno = async (w: TestWallet): Promise<number> => {
		if (facade.state(w.address).status !== "active") return 0;
		const r = await facade.exclusive(() => bc.runGetMethod(w.address, "seqno"));
		return Number(r.stackReader.readBigNumber());
	};

	const signedBoc: TonNode["signedBoc"] = async (from, messages, o = {}) => {
		const s = o.seqno ?? (await seqno(from));
		const timeout = facade.now() + (o.timeout ?? 60);
		const sendMode = o.sendMode ?? SendMode.PAY_GAS_SEPARATELY + SendMode.IGNORE_ERRORS;
		const body =
			from.contract instanceof WalletContractV5R1
				? from.contract.createTransfer({ seqno: s, secretKey: from.keyPair.secretKey, messages, sendMode, timeout })
				: (from.contract as WalletContractV4).createTransfer({ seqno: s, secretKey: from.keyPair.secretKey, messages, sendMode, timeout });
		const init = facade.state(from.address).status === "active" ? undefined : from.contract.init;
		return beginCell().store(storeMessage(external({ to: from.address, init, body }))).endCell().toBoc().toString("base64");
	};

	const send: TonNode["send"] = async (from, messages, o = {}) => {
		const boc = await signedBoc(from, messages, o);
		return collect(() => facade.sendBoc(Buffer.from(boc, "base64")));
	};

	const pay: TonNode["pay"] = async (from, to, amount, o = {}) => {
		let dest: Address;
		let bounce = o.bounce;
		if (typeof to === "string") {
			const parsed = Address.isFriendly(to) ? Address.parseFriendly(to) : null;
			dest = parsed ? parsed.address : Address.parse(to);
			bounce ??= parsed ? parsed.isBounceable : false;
		} else dest = to;
		const body = o.body ?? (o.comment !== undefined ? beginCell().storeUint(0, 32).storeStringTail(o.comment).endCell() : undefined);
		return send(from, [internal({ to: dest, value: amount, bounce: bounce ?? false, body, init: o.init })], o);
	};

	const payMany: TonNode["payMany"] = async (from, payments, o = {}) => {
		const per = from.version === "v5" ? 255 : 4;
		const out: Sent[] = [];
		for (let i = 0; i < payments.length; i += per) {
			const msgs = payments.slice(i, i + per).map(p => internal({ to: p.to, value: p.amount, bounce: p.bounce ?? false, body: p.comment !== undefined ? beginCell().storeUint(0, 32).storeStringTail(p.comment).endCell() : undefined }));
			out.push(await send(from, msgs, o));
		}
		return out;
	};

	const masterOf = (j: Jetton | Address) => (j instanceof Address ? j : j.master);
	const jettonWalletAddress: TonNode["jettonWalletAddress"] = async (j, owner) => {
		const r = await facade.exclusive(() => bc.runGetMethod(masterOf(j), "get_wallet_address", [{ type: "slice", cell: beginCell().storeAddress(owner).endCell() }]));
		return r.stackReader.readAddress();
	};
	const jettonBalance: TonNode["jettonBalance"] = async (j, owner) => {
		const jw = await jettonWalletAddress(j, owner);
		if (facade.state(jw).status !== "active") return 0n;
		const r = await facade.exclusive(() => bc.runGetMethod(jw, "get_wallet_data"));
		return r.stackReader.readBigNumber();
	};

	const deployJetton: TonNode["deployJetton"] = async (o = {}) => {
		const admin = o.admin ?? (await wallet({ balance: toNano("100") }));
		const symbol = o.symbol ?? "USDT";
		const decimals = o.decimals ?? 6;
		const content = internalOnchainContentToCell({ name: o.name ?? `Test ${symbol}`, symbol, decimals: String(decimals) });
		const minter = JettonMinter.createFromConfig({ admin: admin.address, content });
		await send(admin, [internal({ to: minter.address, value: toNano("0.1"), bounce: false, init: minter.init })]);
		if (facade.state(minter.address).status !== "active") throw new Error("the jetton minter was not deployed");
		return { master: minter.address, admin, symbol, decimals };
	};

	const placeJetton: TonNode["placeJetton"] = async (master, o = {}) => {
		const admin = await wallet({ balance: toNano("100") });
		const symbol = o.symbol ?? "USDT";
		const decimals = o.decimals ?? 6;
		const minter = JettonMinter.createFromConfig({ admin: admin.address, content: internalOnchainContentToCell({ name: o.name ?? `Test ${symbol}`, symbol, decimals: String(decimals) }) });
		await facade.exclusive(() => bc.setShardAccount(master, createShardAccount({ address: master, code: minter.init!.code!, data: minter.init!.data!, balance: toNano("1"), workchain: 0 })));
		return { master, admin, symbol, decimals };
	};

	const mint: TonNode["mint"] = async (j, owner, amount) => {
		const body = beginCell()
			.store(storeJettonMintMessage({ queryId: 0n, amount, from: j.master, to: owner, responseAddress: j.admin.address, forwardPayload: null, forwardTonAmount: 0n, walletForwardValue: toNano("0.03") }))
			.endCell();
		return send(j.admin, [internal({ to: j.master, value: toNano("0.1"), bounce: true, body })]);
	};

	const jettonTransfer: TonNode["jettonTransfer"] = async (from, j, toOwner, amount, o = {}) => {
		const source = await jettonWalletAddress(j, from.address);
		const forwardPayload = o.comment !== undefined ? beginCell().storeUint(0, 32).storeStringTail(o.comment).endCell() : null;
		const body = beginCell()
			.store(
				storeJettonTransferMessage({
					queryId: BigInt(Date.now()),
					amount,
					destination: toOwner,
					responseDestination: o.responseTo === undefined ? from.address : o.responseTo,
					customPayload: null,
					forwardAmount: o.forwardTonAmount ?? toNano("0.01"),
					forwardPayload,
				}),
			)
			.endCell();
		return send(from, [internal({ to: source, value: o.value ?? toNano("0.1"), bounce: true, body })], o);
	};

	const forgedNotification: TonNode["forgedNotification"] = async (from, toOwner, amount, o = {}) => {
		const payload = o.comment !== undefined ? beginCell().storeUint(0, 32).storeStringTail(o.comment).endCell() : null;
		const body = beginCell()
			.storeUint(0x7362d09c, 32)
			.storeUint(0, 64)
			.storeCoins(amount)
			.storeAddress(o.claimedSender ?? from.address)
			.storeMaybeRef(payload) // forward_payload: Either Cell ^Cell, here the ^Cell branch (or empty)
			.endCell();
		return send(from, [internal({ to: toOwner, value: o.value ?? toNano("0.01"), bounce: false, body })]);
	};

	const api: TonNode["api"] = async (path, body) => {
		const res = await fetch(url + path, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
		return { status: res.status, body: (await res.json()) as never };
	};

	const faucet = await wallet({ balance: toNano("1000000") });

	return {
		url,
		facade,
		testnet,
		faucet,
		seal: () => facade.seal(),
		settle: () => facade.settle(),
		autoSeal: ms => facade.setAutoSeal(ms),
		setHopBlocks: n => void (facade.hopBlocks = n),
		setExternals: m => void (facade.externals = m),
		lost: () => [...facade.lost],
		lastSeqno: () => facade.blocks[facade.blocks.length - 1].seqno,
		pendingCount: () => facade.pending.length,
		checkpoint: () => facade.checkpoint(),
		rollback: cp => facade.rollback(cp),
		advanceTime: s => facade.advanceTime(s),
		keyPair,
		wallet,
		send,
		signedBoc,
		pay,
		payMany,
		deployJetton,
		placeJetton,
		mint,
		jettonTransfer,
		forgedNotification,
		jettonWalletAddress,
		jettonBalance,
		balance: a => facade.state(a).balance,
		status: a => facade.state(a).status,
		seqno,
		api,
		stop: () => facade.close(),
	};
}

export { rawAddress };
