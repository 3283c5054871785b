/**
 * The automatic EVM sweeper on a real anvil node: settled payments in ETH and in the test USDC
 * move from their deposit addresses to the merchant's withdrawal address; 20 token deposits in
 * one EIP-7702 batch; what the chain holds matches the ledger.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Contract, formatUnits, parseEther, parseUnits, Wallet } from "ethers";
import { deploySweepContracts } from "../../lib/chains/evm/sweep";
import { v5 as uuidv5 } from "uuid";
import { CATALOGUE_NAMESPACE, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { acquireLease } from "../../lib/watchers/store";
import { money } from "../../lib/money";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { createMerchant, IDS, openCheckout, sandboxMerchant, setPrices, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const USDC = tokenIdFor("anvil-local", "USDC");
const SWEEPER = 5;

/** A node with the payments services, the watcher, the ledger and the sweeper on `anvil` (sweeper wallet: account SWEEPER). */
function startSweeperNode(anvil: Anvil, env: Record<string, string>): Promise<TestNode> {
	return startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
		env: {
			RPC_URL_ANVIL_LOCAL: anvil.url,
			WATCHER_POLL_MS: "100",
			WATCHER_RECONCILE_MS: "0",
			SWEEPER_PRIVATE_KEY: (anvil.accounts[SWEEPER].signer as Wallet).privateKey,
			SWEEP_POLL_MS: "200",
			SWEEP_LEASE_MS: "2000",
			SWEEP_MIN_VALUE_MULTIPLE: "2",
			...env,
		},
	});
}


describe("EVM sweeper on a real anvil node", () => {
	let anvil: Anvil;
	let node: TestNode;
	let token: Contract;
	let user: UserWithToken;
	let key: { key: string; secret: string };
	const destination = Wallet.createRandom().address;

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		await anvil.setAutomine(true);
		const sweeperWallet = anvil.accounts[SWEEPER];
		const contracts = await deploySweepContracts(sweeperWallet);
		node = await startSweeperNode(anvil, {
			TEST_USDC_ADDRESS: await token.getAddress(),
			SWEEP_CONTRACTS_ANVIL_LOCAL: `${contracts.batcher},${contracts.delegate}`,
			// A batch waits for 20 deposits, or this long.
			SWEEP_MAX_AGE_MINUTES: "60",
		});
		({ user, key } = await sandboxMerchant(node));
		const saved = await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination }, strategy: 1 } });
		expect(saved.status).toBe(200);
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	async function paidCheckout(amount: string, tokenId: string, currency: string, pay: (to: string) => Promise<unknown>) {
		const opened = await openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
		await pay(opened.address);
		return opened;
	}

	/** Ledger balance of the sandbox organization for a token (sum of its entries). */
	async function ledger(tokenId: string): Promise<string> {
		return ((await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId })) as { balance: string }).balance;
	}

	it("sweeps a settled ETH payment to the withdrawal address; the deposit's chain balance equals the ledger", async () => {
		const before = await anvil.provider.getBalance(destination);
		const c = await paidCheckout("0.5", ETH, "eth", to => anvil.accounts[2].sendTransaction({ to, value: parseEther("0.5") }));
		await until("completed", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
		const sweep = await until("native sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { kind: "native", status: "confirmed" } }), 60_000);
		const received = (await anvil.provider.getBalance(destination)) - before;
		expect(received).toBeGreaterThan(parseEther("0.49"));
		const left = await anvil.provider.getBalance(c.address);
		// credit 0.5 - withdrawal (value) - fee = what is still at the deposit address (unused gas headroom)
		await until("ledger written", async () => money(await ledger(ETH)).lt(money("0.5")));
		expect(money(await ledger(ETH)).eq(money(formatUnits(left, 18)))).toBe(true);
		expect(sweep.txHash).toMatch(/^0x[0-9a-f]{64}$/);
	}, 140_000);

	it("sweeps 20 ERC-20 deposits in one EIP-7702 transaction; chain balances match the ledger", async () => {
		const payer = token.connect(anvil.accounts[1]) as Contract;
		const before = (await token.balanceOf(destination)) as bigint;
		const checkouts = [];
		for (let i = 0; i < 20; i++) checkouts.push(await paidCheckout("2.5", USDC, "usdc", to => payer.transfer(to, parseUnits("2.5", 6)).then((t: { wait(): Promise<unknown> }) => t.wait())));
		const sweep = await until("batch sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { kind: "batch7702", status: "confirmed" } }), 90_000);
		const items = await node.app.models.SweepItem.findAll({ where: { sweepId: sweep.id } });
		expect(items).toHaveLength(20);
		expect(((await token.balanceOf(destination)) as bigint) - before).toBe(parseUnits("50", 6));
		for (const c of checkouts) expect((await token.balanceOf(c.address)) as bigint).toBe(0n);
		await until("ledger at zero", async () => money(await ledger(USDC)).isZero());
		console.log(`sweeper: 20 ERC-20 deposits in one EIP-7702 transaction, ${BigInt(sweep.gasUsed!) / 20n} gas per address (authorizations included)`);
	}, 140_000);

	it("pays a merchant's withdrawal requests (no settings: funds wait at the deposits) with their exact amounts", async () => {
		const other = await createUserWithToken(node);
		const made = await node.http("POST", `/organizations/${other.sandbox.id}/api-keys`, { token: other.token, body: { name: "shop" } });
		const otherKey = { key: made.body.key, secret: made.body.secret };
		const pay = async (amount: string, tokenId: string, currency: string, send: (to: string) => Promise<unknown>) => {
			const created = await node.http("POST", "/payment_intents", { key: otherKey, body: { amount, currency, payment_method_types: ["crypto"], tokenId, networkId: NET, return_url: "https://shop.example.com/r" } });
			const slug = created.body.paymentLink.link.split("/pay/")[1];
			const tx = (await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} })).body;
			await send(tx.depositAddress);
			await until("settled", async () => (await node.http("GET", `/payments/transactions/${tx.id}`)).body.status === "completed", 30_000);
			return tx.depositAddress as string;
		};
		await pay("0.5", ETH, "eth", to => anvil.accounts[2].sendTransaction({ to, value: parseEther("0.5") }).then(t => t.wait()));
		await pay("4", USDC, "usdc", to => (token.connect(anvil.accounts[1]) as Contract).transfer(to, parseUnits("4", 6)).then((t: { wait(): Promise<unknown> }) => t.wait()));
		const available = async (tokenId: string) => ((await node.broker.call("withdrawals.balance", { organizationId: other.sandbox.id, networkId: NET, tokenId })) as { available: string }).available;
		await until("ledger credited", async () => money(await available(ETH)).eq(money("0.5")) && money(await available(USDC)).eq(money("4")), 30_000);
		// Nothing is swept without settings.
		expect(await node.app.models.SweepItem.count({ where: { organizationId: other.sandbox.id } })).toBe(0);

		const payee = Wallet.createRandom().address;
		const ask = (amount: string, tokenId: string) => node.http("POST", "/withdrawals/requests", { token: other.token, body: { amount, tokenId, sourceNetworkId: NET, address: payee, strategy: 1 } });
		const ethRequest = await ask("0.3", ETH);
		expect(ethRequest.status).toBe(201);
		const usdcRequest = await ask("1.5", USDC);
		expect(usdcRequest.status).toBe(201);
		const done = async () => ((await node.http("GET", "/withdrawals/requests", { token: other.token })).body as Array<{ id: string; status: string }>).filter(r => r.status === "completed").length === 2;
		await until("both requests completed", done, 60_000);
		// A request completes just before its sweep is closed, and an open sweep's funds are held: wait for both closed.
		await until("the requests' sweeps closed", async () => (await node.app.models.Sweep.count({ where: { requestId: [ethRequest.body.id, usdcRequest.body.id], status: ["planned", "signed", "broadcast"] } })) === 0, 30_000);
		expect(await anvil.provider.getBalance(payee)).toBe(parseEther("0.3"));
		expect((await token.balanceOf(payee)) as bigint).toBe(parseUnits("1.5", 6));
		expect(money(await available(USDC)).eq(money("2.5"))).toBe(true);
		// 0.5 - 0.3 - the send's gas = what the deposit still holds on chain.
		const eth = money(await available(ETH));
		expect(eth.lt(money("0.2")) && eth.gt(money("0.19"))).toBe(true);
	}, 180_000);
});

describe("EVM sweeper on a network without EIP-7702, and a stuck sweep", () => {
	let anvil: Anvil;
	let node: TestNode;
	let token: Contract;
	let user: UserWithToken;
	let key: { key: string; secret: string };
	const destination = Wallet.createRandom().address;

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		await anvil.setAutomine(true);
		node = await startSweeperNode(anvil, { TEST_USDC_ADDRESS: await token.getAddress(), EIP7702_ANVIL_LOCAL: "false", SWEEP_STUCK_MS: "1000" });
		({ user, key } = await sandboxMerchant(node));
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination } } })).status).toBe(200);
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	const checkout = (amount: string, tokenId: string, currency: string) => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
	const balanceOf = async (tokenId: string) => ((await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId })) as { balance: string }).balance;

	it("tops the deposit up with gas from the sweeper wallet, then sends its tokens", async () => {
		const c = await checkout("4", USDC, "usdc");
		await (await (token.connect(anvil.accounts[1]) as Contract).transfer(c.address, parseUnits("4", 6))).wait();
		await until("token sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { kind: "token", status: "confirmed" } }), 60_000);
		const topUp = await node.app.models.Sweep.findOne({ where: { kind: "topup", status: "confirmed" } });
		expect(topUp?.toAddress).toBe(c.address);
		expect((await token.balanceOf(destination)) as bigint).toBe(parseUnits("4", 6));
		expect((await token.balanceOf(c.address)) as bigint).toBe(0n);
		await until("ledger at zero", async () => money(await balanceOf(USDC)).isZero());
		expect(await node.app.models.Sweep.count({ where: { kind: "batch7702" } })).toBe(0);
	}, 110_000);

	it("replaces a sweep stuck in the mempool with higher fees (same nonce), and moves the funds once", async () => {
		const c = await checkout("0.8", ETH, "eth");
		await (await anvil.accounts[2].sendTransaction({ to: c.address, value: parseEther("0.8") })).wait();
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
		// From now on blocks are mined by hand, and the next block's base fee is far above the sweep's max fee.
		await anvil.setAutomine(false);
		const planned = await until("native sweep broadcast", async () => node.app.models.Sweep.findOne({ where: { kind: "native", status: "broadcast" } }), 30_000);
		const block = await anvil.provider.getBlock("latest");
		await anvil.rpc("anvil_setNextBlockBaseFeePerGas", [`0x${((block!.baseFeePerGas ?? 1n) * 50n).toString(16)}`]);
		await anvil.mine(1);
		const bumped = await until("replaced", async () => {
			const s = await node.app.models.Sweep.findByPk(planned.id);
			return s && s.feeStep >= 1 ? s : null;
		}, 30_000);
		expect(bumped.hashes.length).toBeGreaterThanOrEqual(2);
		expect(bumped.nonce).toBe(planned.nonce);
		let done = null;
		for (let i = 0; i < 60 && !done; i++) {
			await anvil.mine(1);
			await new Promise(r => setTimeout(r, 300));
			done = await node.app.models.Sweep.findOne({ where: { id: planned.id, status: "confirmed" } });
		}
		expect(done).not.toBeNull();
		const mined = [];
		for (const h of done!.hashes) if (await anvil.provider.getTransactionReceipt(h)) mined.push(h);
		expect(mined).toEqual([done!.txHash]);
		await anvil.setAutomine(true);
		const left = await anvil.provider.getBalance(c.address);
		await until("ledger written", async () => money(await balanceOf(ETH)).eq(money(formatUnits(left, 18))));
	}, 140_000);
});

describe("EVM sweeper lease", () => {
	let anvil: Anvil;
	let node: TestNode;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		node = await startSweeperNode(anvil, { EIP7702_ANVIL_LOCAL: "false", SWEEP_LEASE_MS: "60000" });
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	it("is given up at a graceful stop, so a standby takes the network at once instead of after SWEEP_LEASE_MS", async () => {
		const leaseId = uuidv5(`sweep:${NET}`, CATALOGUE_NAMESPACE);
		const held = await until("the sweep lease taken", async () => {
			const row = await node.app.models.ChainCursor.findByPk(leaseId);
			return row?.leaseOwner ? row : null;
		}, 30_000);
		expect(held.leaseOwner).toContain(":sweeper-evm");
		expect(held.leaseUntil!.getTime()).toBeGreaterThan(Date.now() + 30_000);
		await node.broker.destroyService(node.broker.getLocalService("sweeper-evm")!);
		const after = await node.app.models.ChainCursor.findByPk(leaseId);
		expect({ owner: after!.leaseOwner, until: after!.leaseUntil }).toEqual({ owner: null, until: null });
		// Another process's sweeper takes it now (the lease was 60 s).
		expect(await acquireLease(node.app.models, leaseId, "standby:1:sweeper-evm", 60_000, Date.now())).toMatchObject({ owner: "standby:1:sweeper-evm" });
	});
});

describe("EVM sweeper configuration", () => {
	it("refuses to start in production without the sweeper wallet's key", async () => {
		const secrets = { AUTH_JWT_SECRET: "j".repeat(40), AUTH_REFRESH_SECRET: "r".repeat(40), MASTER_KEY: "m".repeat(40) };
		await expect(startNode({ services: ["networks", "transactions", "withdrawals", "sweeper-evm"], env: { NODE_ENV: "production", ...secrets } })).rejects.toThrow(/SWEEPER_PRIVATE_KEY is required in production/);
	});
});

describe("EVM sweeper, strategy 2: a bridged payment goes through the bridge provider", () => {
	let anvil: Anvil;
	let node: TestNode;
	let bridgeServer: http.Server;
	const quotes: any[] = [];
	let statusCalls = 0;
	const bridgeDeposit = Wallet.createRandom().address;
	const merchantAddress = Wallet.createRandom().address;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		// A bridge provider speaking the generic API (docs/withdrawals.md "Strategy 2"): one quote, pending once, then completed.
		bridgeServer = http.createServer((req, res) => {
			const chunks: Buffer[] = [];
			req.on("data", c => chunks.push(c));
			req.on("end", () => {
				res.setHeader("content-type", "application/json");
				if (req.method === "POST" && req.url === "/quote") {
					const body = JSON.parse(Buffer.concat(chunks).toString());
					quotes.push(body);
					res.end(JSON.stringify({ quoteId: `q${quotes.length}`, depositAddress: bridgeDeposit, expectedOutput: "1000", fee: "1", expiresAt: new Date(Date.now() + 600_000).toISOString() }));
				} else if (req.method === "GET" && req.url?.startsWith("/status/")) {
					statusCalls++;
					res.end(JSON.stringify(statusCalls === 1 ? { state: "pending" } : { state: "completed", destinationTxHash: "0x" + "ab".repeat(32), outputAmount: "1000" }));
				} else {
					res.statusCode = 404;
					res.end("{}");
				}
			});
		});
		await new Promise<void>(resolve => bridgeServer.listen(0, "127.0.0.1", () => resolve()));
		const port = (bridgeServer.address() as AddressInfo).port;
		node = await startSweeperNode(anvil, { BRIDGE_PROVIDER_URL: `http://127.0.0.1:${port}` });
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await new Promise(resolve => bridgeServer?.close(resolve));
		await anvil?.stop();
	});

	it("quotes the bridge for the exact amount, sends it to the provider's deposit address, and follows it to completed", async () => {
		await setPrices(node, { [IDS.sepoliaEth]: "3000", [ETH]: "3000" });
		const merchant = await createMerchant(node);
		expect((await node.http("PUT", "/withdrawals/settings", { token: merchant.token, body: { addresses: { evm: merchantAddress }, strategy: 2 } })).status).toBe(200);
		// The merchant prices in Sepolia ETH; the payer pays on the local chain: the quote requires a bridge.
		const created = await node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: { amount: "0.5", currency: "eth", payment_method_types: ["crypto"], tokenId: IDS.sepoliaEth, networkId: IDS.sepolia, return_url: "https://shop.example.com/r" } });
		expect(created.status).toBe(200);
		const slug = created.body.paymentLink.link.split("/pay/")[1];
		const checkout = await node.http("POST", `/payments/links/${slug}/transactions`, { body: { payerTokenId: ETH, payerNetworkId: NET } });
		expect(checkout.status).toBe(201);
		await (await anvil.accounts[2].sendTransaction({ to: checkout.body.depositAddress, value: parseEther(checkout.body.totalAmount) })).wait();
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${checkout.body.id}`)).body.status === "completed", 30_000);

		const done = await until("bridge completed", async () => node.app.models.Sweep.findOne({ where: { bridgeState: "completed" } }), 60_000);
		expect(quotes).toHaveLength(1);
		expect(quotes[0]).toMatchObject({ sourceChainType: "evm", sourceChainId: 31337, sourceToken: "", destinationChainType: "evm", destinationChainId: 11155111, destinationToken: "", recipient: merchantAddress });
		// Exactly the quoted amount reached the provider's deposit address.
		expect((await anvil.provider.getBalance(bridgeDeposit)).toString()).toBe(quotes[0].amount);
		expect(done).toMatchObject({ kind: "native", status: "confirmed", toAddress: bridgeDeposit, bridgeQuoteId: "q1", bridgeTxHash: "0x" + "ab".repeat(32) });
		expect(await anvil.provider.getBalance(merchantAddress)).toBe(0n);
	}, 120_000);
});
