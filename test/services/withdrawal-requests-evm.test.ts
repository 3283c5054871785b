/**
 * Withdrawal requests and the EVM sweeper on a real anvil node (docs/withdrawals.md "Requests",
 * "Available"): the sweeper reads its own network's queue (requests of other networks never hide
 * it); a request is accepted only against funds that are really available (not in a sweep in
 * flight, not a checkout's with its own withdrawal address) and paid only from funds whose
 * destination is the settings' (or none); the automatic sweep leaves what pending requests need.
 * After each test the ledger equals what the merchant's deposits hold on chain.
 */
import crypto from "node:crypto";
import { formatEther, parseEther, Wallet } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { startAnvil, Anvil } from "../helpers/anvil";
import type { TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import type { UserWithToken } from "../helpers/users";
import { IDS, openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const HOUR = 3_600_000;

describe("withdrawal requests on a real anvil node", () => {
	let anvil: Anvil;
	let node: TestNode;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
			env: {
				RPC_URL_ANVIL_LOCAL: anvil.url,
				WATCHER_POLL_MS: "100",
				WATCHER_RECONCILE_MS: "0",
				SWEEPER_PRIVATE_KEY: (anvil.accounts[5].signer as Wallet).privateKey,
				SWEEP_POLL_MS: "200",
				SWEEP_LEASE_MS: "2000",
				// Native deposits are swept automatically only once older than an hour (the tests move the clock).
				SWEEP_MIN_VALUE_MULTIPLE: "1000000",
				SWEEP_MAX_AGE_MINUTES: "60",
				WITHDRAWALS_FEED_POLL_MS: "200",
			},
		});
	}, 120_000);

	afterAll(async () => {
		node?.clock.reset();
		await node?.stop();
		await anvil?.stop();
	}, 240_000);

	interface Shop {
		user: UserWithToken;
		key: { key: string; secret: string };
		deposits: string[];
	}

	async function shop(settings?: string): Promise<Shop> {
		const { user, key } = await sandboxMerchant(node);
		if (settings) expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: settings } } })).status).toBe(200);
		return { user, key, deposits: [] };
	}

	/** A settled ETH checkout of `s` (with its own withdrawal address when given), credited in the ledger. */
	async function paid(s: Shop, amount: string, own?: string) {
		const c = await openCheckout(node, s.key, { amount, currency: "eth", tokenId: ETH, networkId: NET, ...(own ? { withdrawal_addresses: { evm: own } } : {}) } as Parameters<typeof openCheckout>[2]);
		await (await anvil.accounts[2].sendTransaction({ to: c.address, value: parseEther(amount) })).wait();
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
		await until("credited", async () => (await node.app.models.LedgerEntry.count({ where: { kind: "credit", refType: "transaction", refId: c.txId } })) === 1, 30_000);
		s.deposits.push(c.address);
		return c;
	}

	const balance = async (s: Shop) => (await node.broker.call("withdrawals.balance", { organizationId: s.user.sandbox.id, networkId: NET, tokenId: ETH })) as { balance: string; reserved: string; held: string; available: string };
	const ask = (s: Shop, amount: string, address: string) => node.http("POST", "/withdrawals/requests", { token: s.user.token, body: { amount, tokenId: ETH, sourceNetworkId: NET, address, strategy: 1 } });
	const requestOf = (id: string) => node.app.models.WithdrawalRequest.findByPk(id);

	/** The ledger's balance equals what the merchant's deposit addresses hold on chain. */
	async function ledgerEqualsChain(s: Shop) {
		let held = 0n;
		for (const d of s.deposits) held += await anvil.provider.getBalance(d);
		await until(`ledger equal to the chain (${formatEther(held)})`, async () => money((await balance(s)).balance).eq(money(formatEther(held))), 30_000, () => "ledger differs");
	}

	it("pays a request of its network although 120 older pending requests of other networks and modes wait", async () => {
		const s = await shop();
		await paid(s, "0.5");
		// Older requests on networks this sweeper does not serve (sandbox and live): the queue of anvil-local is its own.
		const old = new Date(Date.now() - 24 * HOUR);
		const others = [
			{ networkId: IDS.sepolia, tokenId: IDS.sepoliaEth, mode: "sandbox" as const },
			{ networkId: IDS.bitcoinTestnet, tokenId: IDS.bitcoinTestnetBtc, mode: "sandbox" as const },
			{ networkId: IDS.ethereum, tokenId: IDS.ethereumEth, mode: "live" as const },
		];
		await node.app.models.WithdrawalRequest.bulkCreate(
			Array.from({ length: 120 }, (_, i) => {
				const o = others[i % others.length];
				const at = new Date(old.getTime() + i);
				return { id: crypto.randomUUID(), organizationId: crypto.randomUUID(), mode: o.mode, userId: s.user.user.id, amount: "1", tokenId: o.tokenId, sourceNetworkId: o.networkId, destinationNetworkId: null, address: Wallet.createRandom().address, strategy: 1, status: "pending" as const, reason: null, txHash: null, createdAt: at, updatedAt: at, completedAt: null };
			}),
		);
		const payee = Wallet.createRandom().address;
		const made = await ask(s, "0.2", payee);
		expect(made.status).toBe(201);
		await until("the request paid", async () => (await requestOf(made.body.id))?.status === "completed", 60_000);
		expect(await anvil.provider.getBalance(payee)).toBe(parseEther("0.2"));
		expect(await node.app.models.Sweep.count({ where: { requestId: made.body.id } })).toBe(1);
		await ledgerEqualsChain(s);
	}, 240_000);

	it("never pays a request from a checkout with its own withdrawal address, and does not count it as available", async () => {
		const s = await shop();
		const ownAddress = Wallet.createRandom().address;
		const own = await paid(s, "0.5", ownAddress);
		const plain = await paid(s, "0.4");
		// The 0.5 belong to the checkout's own address: only the 0.4 may be asked for.
		await until("available is the plain checkout's", async () => money((await balance(s)).available).eq(money("0.4")), 10_000);
		const tooMuch = await ask(s, "0.45", Wallet.createRandom().address);
		expect([tooMuch.status, tooMuch.body.errors]).toEqual([400, { amount: "insufficientBalance" }]);
		const payee = Wallet.createRandom().address;
		const made = await ask(s, "0.3", payee);
		expect(made.status).toBe(201);
		await until("the request paid", async () => (await requestOf(made.body.id))?.status === "completed", 60_000);
		const sweeps = await node.app.models.Sweep.findAll({ where: { requestId: made.body.id } });
		const items = await node.app.models.SweepItem.findAll({ where: { sweepId: sweeps.map(x => x.id) } });
		expect(items.map(i => i.transactionId)).toEqual([plain.txId]);
		expect(await anvil.provider.getBalance(payee)).toBe(parseEther("0.3"));
		// The own-address checkout's funds are untouched at its deposit.
		expect(await anvil.provider.getBalance(own.address)).toBe(parseEther("0.5"));
		await ledgerEqualsChain(s);
	}, 240_000);

	it("keeps the funds pending requests need out of the automatic sweep; what is left over is swept", async () => {
		const destination = Wallet.createRandom().address;
		const s = await shop(destination);
		await paid(s, "0.5");
		await paid(s, "0.5");
		// No single deposit holds 0.7 and its gas: the request waits, and its funds must wait with it.
		const payee = Wallet.createRandom().address;
		const made = await ask(s, "0.7", payee);
		expect(made.status).toBe(201);
		expect(await balance(s)).toMatchObject({ balance: "1", reserved: "0.7", available: "0.3" });
		// Every deposit is now old enough to be swept; another merchant's deposit shows the planner ran.
		const witness = await shop(Wallet.createRandom().address);
		const witnessed = await paid(witness, "0.2");
		node.clock.advance(2 * HOUR);
		// The planner goes through settled checkouts oldest first: once the witness (settled last) is
		// planned, the same pass has already decided about this merchant's two deposits.
		await until("the witness swept", async () => node.app.models.SweepItem.findOne({ where: { transactionId: witnessed.txId } }), 60_000);
		expect(await node.app.models.SweepItem.count({ where: { organizationId: s.user.sandbox.id } })).toBe(0);
		expect(await balance(s)).toMatchObject({ balance: "1", reserved: "0.7", available: "0.3" });
		for (const d of s.deposits) expect(await anvil.provider.getBalance(d)).toBe(parseEther("0.5"));

		// A deposit that can pay it arrives: the request is paid from it, then the rest is swept.
		await paid(s, "0.8");
		await until("the request paid", async () => (await requestOf(made.body.id))?.status === "completed", 60_000);
		expect(await anvil.provider.getBalance(payee)).toBe(parseEther("0.7"));
		await until("both 0.5 deposits swept", async () => (await node.app.models.Sweep.count({ where: { status: "confirmed", toAddress: destination } })) === 2, 60_000);
		expect((await balance(s)).reserved).toBe("0");
		expect(money((await balance(s)).available).gte(0)).toBe(true);
		await ledgerEqualsChain(s);
		await ledgerEqualsChain(witness);
	}, 240_000);

	it("refuses a request for funds a sweep in flight is moving (400 insufficientBalance)", async () => {
		const destination = Wallet.createRandom().address;
		const s = await shop(destination);
		const c = await paid(s, "0.5");
		// Blocks by hand from now on: the sweep stays in flight until a block is mined.
		await anvil.setAutomine(false);
		try {
			node.clock.advance(2 * HOUR);
			const inFlight = await until("the sweep broadcast", async () => {
				const item = await node.app.models.SweepItem.findOne({ where: { transactionId: c.txId } });
				const sweep = item && (await node.app.models.Sweep.findByPk(item.sweepId));
				return sweep?.status === "broadcast" ? sweep : null;
			}, 60_000);
			node.clock.reset(); // the user's session is younger than the moved clock says
			const refused = await ask(s, "0.3", Wallet.createRandom().address);
			expect(refused.status).toBe(400);
			expect(refused.body).toMatchObject({ statusCode: 400, errors: { amount: "insufficientBalance" } });
			expect(await balance(s)).toMatchObject({ balance: "0.5", reserved: "0", held: "0.5", available: "0" });
			await until("the sweep confirmed", async () => {
				await anvil.mine(1);
				return (await node.app.models.Sweep.findByPk(inFlight.id))?.status === "confirmed";
			}, 60_000);
		} finally {
			await anvil.setAutomine(true);
		}
		expect(await node.app.models.WithdrawalRequest.count({ where: { organizationId: s.user.sandbox.id } })).toBe(0);
		expect(money((await balance(s)).available).gte(0)).toBe(true);
		await ledgerEqualsChain(s);
	}, 240_000);
});
