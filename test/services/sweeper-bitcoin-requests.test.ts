/**
 * Withdrawal requests on a Bitcoin-family network, on a real litecoind -regtest
 * (docs/withdrawals.md "Requests on Bitcoin-family networks"): the UTXO sweeper pays a request in
 * ONE transaction, its exact amount to the request's address and the change to the merchant's
 * own address in the settings, once; the ledger equals what the node shows.
 */
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { money } from "../../lib/money";
import { startLitecoind, type Litecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import type { TestNode } from "../helpers/harness";
import type { UserWithToken } from "../helpers/users";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");
const SATS = 100_000_000;

describe("UTXO sweeper: withdrawal requests on a real litecoind -regtest", () => {
	let ltc: Litecoind;
	let node: TestNode;
	let user: UserWithToken;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		ltc = await startLitecoind();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-bitcoin", "withdrawals", "sweeper-bitcoin"],
			env: { RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl, WATCHER_POLL_MS: "50", SWEEP_POLL_MS: "200", SWEEP_LEASE_MS: "2000", WITHDRAWALS_FEED_POLL_MS: "200" },
		});
		({ user, key } = await sandboxMerchant(node));
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await ltc?.stop();
	}, 240_000);

	const balance = async () => (await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId: LTC })) as { balance: string; reserved: string; held: string; available: string };
	/** What an address holds unspent on the node, in LTC (exact: from satoshis). */
	async function unspent(address: string) {
		const scan = await ltc.rpc<{ unspents: Array<{ amount: number }> }>("scantxoutset", ["start", [`addr(${address})`]]);
		return money(scan.unspents.reduce((sum, u) => sum + Math.round(u.amount * SATS), 0)).div(SATS);
	}

	it("pays a request once: the exact amount to its address, the change to the merchant's address; the ledger equals the chain", async () => {
		const deposits = [];
		for (const amount of ["0.3", "0.25"]) {
			const c = await openCheckout(node, key, { amount, currency: "ltc", tokenId: LTC, networkId: NET });
			await ltc.wallet("sendtoaddress", [c.address, amount]);
			deposits.push(c);
		}
		await ltc.mine(3);
		for (const c of deposits) await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
		await until("credited", async () => money((await balance()).balance).eq(money("0.55")), 30_000);

		// Settings (the change's address) and the request, with the sweeper stopped so that nothing is
		// consolidated in between; its first step then pays the request before it plans any sweep.
		await node.broker.destroyService(node.broker.getLocalService("sweeper-bitcoin")!);
		const merchantAddress = await ltc.wallet<string>("getnewaddress", ["merchant", "bech32"]);
		const payeeWallet = await ltc.createWallet("payee");
		const payee = await payeeWallet<string>("getnewaddress", ["", "bech32"]);
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { litecoin: merchantAddress } } })).status).toBe(200);
		const made = await node.http("POST", "/withdrawals/requests", { token: user.token, body: { amount: "0.4", tokenId: LTC, sourceNetworkId: NET, address: payee, strategy: 1 } });
		expect(made.status).toBe(201);
		expect(await balance()).toMatchObject({ balance: "0.55", reserved: "0.4", available: "0.15" });
		await node.broker.createService(loadServiceSchema(availableServices()["sweeper-bitcoin"]));

		const sweep = await until("the request's payment broadcast", async () => node.app.models.Sweep.findOne({ where: { requestId: made.body.id, status: "broadcast" } }), 60_000);
		const tx = await ltc.rpc<{ vin: unknown[]; vout: Array<{ value: number; scriptPubKey: { addresses?: string[]; address?: string } }> }>("decoderawtransaction", [sweep.rawTx]);
		const to = (o: (typeof tx.vout)[number]) => o.scriptPubKey.address ?? o.scriptPubKey.addresses?.[0];
		expect(tx.vin).toHaveLength(2); // neither checkout covers 0.4 alone: both, in one transaction
		expect(tx.vout.map(to)).toEqual([payee, merchantAddress]);
		// The request completes just before its sweep is closed (lib/chains/utxo/sweep-runner.ts confirmRequest): wait for both.
		await until("the request completed and its sweep confirmed", async () => {
			await ltc.mine(1);
			const request = await node.app.models.WithdrawalRequest.findByPk(made.body.id);
			const closed = await node.app.models.Sweep.findByPk(sweep.id);
			return request?.status === "completed" && closed?.status === "confirmed";
		}, 60_000);

		// Exactly the amount, once; the rest less the fee at the merchant's address; the deposits empty.
		expect((await unspent(payee)).eq(money("0.4"))).toBe(true);
		expect(await node.app.models.Sweep.count({ where: { requestId: made.body.id } })).toBe(1);
		const done = (await node.app.models.Sweep.findByPk(sweep.id))!;
		expect(done.status).toBe("confirmed");
		const fee = money(done.feePaid!).div(SATS);
		expect((await unspent(merchantAddress)).eq(money("0.15").minus(fee))).toBe(true);
		for (const c of deposits) expect((await unspent(c.address)).isZero()).toBe(true);
		// The ledger: credits 0.55, the withdrawal 0.4, the change swept, the fee: nothing left, as on the node.
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: user.sandbox.id, networkId: NET } });
		expect(entries.map(e => [e.kind, e.amount]).sort()).toEqual(
			[
				["credit", "0.3"],
				["credit", "0.25"],
				["fee", fee.neg().toFixed()],
				["sweep", money("0.15").minus(fee).neg().toFixed()],
				["withdrawal", "-0.4"],
			].sort(),
		);
		expect(await balance()).toMatchObject({ balance: "0", reserved: "0", held: "0", available: "0" });
		// Paid once: nothing else was ever sent.
		expect(await node.app.models.Sweep.count()).toBe(1);
	}, 240_000);
});
