/**
 * Real payments on a real EVM node: anvil started by the test, the test stablecoin deployed, a
 * node running the payments services, webhooks and the EVM watcher against it. Blocks are mined
 * by hand (automine off) so the test controls confirmations and reorgs.
 */
import { Contract, Wallet, parseEther, parseUnits } from "ethers";
import { deployContract } from "../../lib/chains/evm/contracts";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { Op } from "sequelize";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { until } from "../helpers/until";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { LogLine, TestNode } from "../helpers/harness";
import { watcherServiceTest } from "../helpers/watcher-service";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const USDC = tokenIdFor("anvil-local", "USDC");
// Above the deepest reorg tested (5), so a reorged payment is always still unconfirmed.
const REQUIRED = 6;

describe("EVM watcher on a real anvil node", () => {
	let anvil: Anvil;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let token: Contract;
	let forwarder: Contract;
	let key: { key: string; secret: string };
	const { getTx, getIntent, hooksFor, credits } = watcherServiceTest(
		"watcher-evm",
		async () => {
			anvil = await startAnvil();
			token = await deployTestUsdc(anvil, [1, 4]);
			await anvil.setAutomine(true);
			forwarder = await deployContract(anvil.accounts[0], "Forwarder");
			await anvil.setAutomine(false);
			return {
				RPC_URL_ANVIL_LOCAL: anvil.url,
				TEST_USDC_ADDRESS: await token.getAddress(),
				REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(REQUIRED),
				WATCHER_RECONCILE_MS: "200",
				// Open addresses read 2 a page: the reconciliation below walks several pages.
				WATCHER_RECONCILE_PAGE: "2",
			};
		},
		t => ({ node, receiver, key } = t),
	);

	afterAll(async () => {
		await anvil?.stop();
	});

	/** An intent paid on anvil: its checkout's deposit address. */
	const checkout = (amount: string, tokenId: string, currency: string) => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });

	const payEth = async (to: string, eth: string) => (await anvil.accounts[2].sendTransaction({ to, value: parseEther(eth) })).hash;
	const payUsdc = async (to: string, usdc: string) => ((await (token.connect(anvil.accounts[1]) as Contract).transfer(to, parseUnits(usdc, 6))) as { hash: string }).hash;

	it("shows an ETH payment confirming n of m, then completes it with signed webhooks", async () => {
		const c = await checkout("0.5", ETH, "eth");
		const hash = await payEth(c.address, "0.5");
		await anvil.mine(1);
		const seen = await until("detection", async () => {
			const tx = await getTx(c.txId);
			return tx.confirmations === 1 ? tx : null;
		});
		expect(seen).toMatchObject({ status: "pending", hash, amountConfirming: "0.5", amountReceived: "0", confirmations: 1, requiredConfirmations: REQUIRED });
		expect((await getIntent(c.intentId)).status).toBe("processing");
		await anvil.mine(1);
		await until("2 of m", async () => (await getTx(c.txId)).confirmations === 2);
		await anvil.mine(REQUIRED - 2);
		const done = await until("completed", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		});
		// Completed, it keeps the count it was credited at (no block was mined since: exactly the required count).
		expect(done).toMatchObject({ amountReceived: "0.5", amountConfirming: "0", confirmations: REQUIRED, requiredConfirmations: REQUIRED, hash });
		expect((await getIntent(c.intentId)).status).toBe("succeeded");
		await until("webhooks", async () => hooksFor(c.intentId).includes("payment_intent.completed"));
		expect(hooksFor(c.intentId)).toEqual(["payment_intent.processing", "payment_intent.completed"]);
		const hook = receiver.received.find(h => h.json?.data?.object?.id === c.intentId)!;
		expect(hook.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
		expect((await credits(c.txId)).map(r => [r.txHash, r.amount, r.confirmations])).toEqual([[hash, "0.5", REQUIRED]]);
	}, 110_000);

	it("credits an ERC-20 payment, a partial payment topped up, and an over-payment", async () => {
		const a = await checkout("25", USDC, "usdc");
		await payUsdc(a.address, "10");
		await anvil.mine(REQUIRED);
		await until("partial", async () => (await getTx(a.txId)).amountReceived === "10");
		expect((await getTx(a.txId)).status).toBe("pending");
		await payUsdc(a.address, "15");
		await anvil.mine(REQUIRED);
		await until("topped up", async () => (await getTx(a.txId)).status === "completed");
		expect((await getTx(a.txId)).amountReceived).toBe("25");

		const b = await checkout("5", USDC, "usdc");
		await payUsdc(b.address, "7.5");
		await anvil.mine(REQUIRED);
		const over = await until("over", async () => {
			const tx = await getTx(b.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(over).toMatchObject({ amountReceived: "7.5", overpaidAmount: "2.5" });
		expect((await getIntent(b.intentId)).status).toBe("succeeded");
	});

	it("records two Transfer logs of one transaction as two payments", async () => {
		const c = await checkout("3", USDC, "usdc");
		const sent = await (token.connect(anvil.accounts[1]) as Contract).batchTransfer([c.address, c.address], [parseUnits("1", 6), parseUnits("2", 6)]);
		await anvil.mine(REQUIRED);
		await until("completed", async () => (await getTx(c.txId)).status === "completed");
		const rows = await credits(c.txId);
		expect(rows.map(r => r.txHash)).toEqual([sent.hash, sent.hash]);
		expect(rows.map(r => r.amount).sort()).toEqual(["1", "2"]);
		expect(new Set(rows.map(r => r.logIndex)).size).toBe(2);
	});

	it("detects and credits one chain transaction paying several checkouts, each once", async () => {
		const targets: Array<{ intentId: string; txId: string; address: string }> = [];
		for (let i = 0; i < 6; i++) targets.push(await checkout("1", USDC, "usdc"));
		const sent = await (token.connect(anvil.accounts[1]) as Contract).batchTransfer(
			targets.map(t => t.address),
			targets.map(() => parseUnits("1", 6)),
		);
		await anvil.mine(1);
		// Detected together (neighbouring keys of one chain transaction), each confirming 1 of m.
		await until("all detected", async () => (await Promise.all(targets.map(t => getTx(t.txId)))).every(tx => tx.confirmations === 1 && tx.hash === sent.hash));
		await anvil.mine(REQUIRED - 1);
		await until("all completed", async () => (await Promise.all(targets.map(t => getTx(t.txId)))).every(tx => tx.status === "completed"));
		for (const t of targets) expect((await credits(t.txId)).map(r => r.amount)).toEqual(["1"]);
	});

	it("credits a payment that arrives after the checkout expired", async () => {
		const c = await checkout("2", USDC, "usdc");
		node.clock.advance(31 * 60_000);
		expect((await getTx(c.txId)).status).toBe("expired");
		await payUsdc(c.address, "2");
		await anvil.mine(REQUIRED);
		const late = await until("late credit", async () => {
			const tx = await getTx(c.txId);
			return tx.amountReceived === "2" ? tx : null;
		});
		expect(["completed", "confirmed"]).toContain(late.status);
		expect(await credits(c.txId)).toHaveLength(1);
	});

	it("finds ETH sent through a contract (no log, no top-level to) by balance reconciliation", async () => {
		const c = await checkout("0.25", ETH, "eth");
		await (forwarder.connect(anvil.accounts[3]) as Contract).forward([c.address], [parseEther("0.25")], { value: parseEther("0.25") });
		await anvil.mine(REQUIRED + 1);
		const done = await until("reconciled", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		}, 30_000);
		expect(done.amountReceived).toBe("0.25");
		const rows = await credits(c.txId);
		expect(rows).toHaveLength(1);
		expect(rows[0].txHash).toMatch(/^reconcile:/);
	});

	it("reconciles open checkouts over several address pages, each once", async () => {
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 5; i++) targets.push(await checkout("0.1", ETH, "eth"));
		const open = await node.app.models.Transaction.count({ where: { payerNetworkId: NET, status: ["pending", "expired", "failed"] } });
		expect(open).toBeGreaterThan(4); // more than two pages of 2
		await (forwarder.connect(anvil.accounts[3]) as Contract).forward(
			targets.map(t => t.address),
			targets.map(() => parseEther("0.1")),
			{ value: parseEther("0.5") },
		);
		await anvil.mine(REQUIRED + 1);
		await until("all reconciled", async () => (await Promise.all(targets.map(t => getTx(t.txId)))).every(tx => tx.status === "completed"), 30_000);
		for (const t of targets) {
			const rows = await credits(t.txId);
			expect(rows.map(r => [r.amount, r.txHash.startsWith("reconcile:")])).toEqual([["0.1", true]]);
		}
	});

	it.each([1, 2, 3, 4, 5])("reverts a payment a reorg of depth %i removes, and credits it once when re-included", async depth => {
		const c = await checkout("1", USDC, "usdc");
		// Signed by hand, so the very same transaction can be sent again after the reorg.
		const payer = anvil.accounts[4].signer as Wallet;
		const request = await (token.connect(payer) as Contract).transfer.populateTransaction(c.address, parseUnits("1", 6));
		const raw = await payer.signTransaction(await payer.populateTransaction({ ...request, nonce: await anvil.provider.getTransactionCount(payer.address, "pending") }));
		const hash = await anvil.rpc<string>("eth_sendRawTransaction", [raw]);
		await anvil.mine(depth); // the payment's block is `depth` deep: depth confirmations, fewer than required
		await until("detected", async () => (await getTx(c.txId)).confirmations === depth);
		expect((await getIntent(c.intentId)).status).toBe("processing");

		await anvil.reorg(depth);
		await until("reverted", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0" && tx.hash === null;
		});
		expect((await getTx(c.txId)).status).toBe("pending");
		expect((await getIntent(c.intentId)).status).toBe("requires_payment_method");
		const rows = await node.app.models.PaymentDetection.findAll({ where: { transactionId: c.txId } });
		expect(rows.map(r => r.status)).toEqual(["reverted"]);
		expect(await credits(c.txId)).toHaveLength(0);
		await until("webhook", async () => hooksFor(c.intentId).includes("payment_intent.requires_payment_method"));

		// The same transfer re-included in a later block (anvil may have put it back in its pool): credited once.
		await anvil.rpc("eth_sendRawTransaction", [raw]).catch(() => undefined);
		await anvil.mine(REQUIRED);
		await until("credited", async () => (await getTx(c.txId)).status === "completed");
		await anvil.mine(2);
		await new Promise(r => setTimeout(r, 300));
		const credited = await credits(c.txId);
		expect(credited.map(r => [r.txHash, r.amount])).toEqual([[hash, "1"]]);
		expect((await getIntent(c.intentId)).status).toBe("succeeded");
	});
});

describe("EVM watcher behind a provider that refuses wide ranges and goes down", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;
	let node: TestNode;
	let token: Contract;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		// Like hosted providers: eth_getLogs over more than 10 blocks is refused.
		proxy = await startRpcProxy(anvil.url, { maxLogsRange: 10 });
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await proxy?.stop();
		await anvil?.stop();
	});

	const start = async () =>
		startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm"],
			env: { RPC_URL_ANVIL_LOCAL: proxy.url, TEST_USDC_ADDRESS: await token.getAddress(), WATCHER_POLL_MS: "50", WATCHER_RECONCILE_MS: "0", WATCHER_MAX_RANGE: "200", WATCHER_RPC_TIMEOUT_MS: "1000" },
		});

	it("splits refused ranges, survives the node going down and the watcher restarting, and misses nothing", async () => {
		node = await start();
		({ key } = await sandboxMerchant(node));
		const open = () => openCheckout(node, key, { amount: "1", currency: "usdc", tokenId: USDC, networkId: NET });
		const payer = token.connect(anvil.accounts[1]) as Contract;
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 6; i++) targets.push(await open());
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null);

		// The watcher is down (its service destroyed) while payments land over ~150 blocks: it catches up.
		await node.broker.destroyService(node.broker.getLocalService("watcher-evm")!);
		for (const t of targets.slice(0, 3)) {
			await payer.transfer(t.address, parseUnits("1", 6));
			await anvil.mine(50);
		}
		node.broker.createService(loadServiceSchema(availableServices()["watcher-evm"]));
		// The RPC node goes down mid-run, then comes back.
		await proxy.stop();
		for (const t of targets.slice(3)) {
			await payer.transfer(t.address, parseUnits("1", 6));
			await anvil.mine(20);
		}
		await new Promise(r => setTimeout(r, 1500));
		await proxy.start();
		await until("all credited", async () => (await node.app.models.TransactionCredit.count({ where: { transactionId: { [Op.in]: targets.map(t => t.txId) } } })) === targets.length, 60_000);
		const credited = await node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: targets.map(t => t.txId) } } });
		expect(new Set(credited.map(c => c.transactionId)).size).toBe(targets.length);
		// Ranges were split: the refused wide queries were answered by narrower ones.
		expect(proxy.calls("eth_getLogs")).toBeGreaterThan(15);
		const head = await anvil.blockNumber();
		await until("caught up", async () => (await node.app.models.ChainCursor.findByPk(NET))!.blockNumber === head);
	}, 180_000);
});

describe("EVM watcher and sweeper with secrets in the RPC URL", () => {
	const USER = "rpc-user";
	const PASSWORD = "pa55-Word-s3cret";
	const API_KEY = "QueryKey0123456789abcdef";
	let anvil: Anvil;
	let proxy: RpcProxy;
	let node: TestNode;
	const logs: LogLine[] = [];

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		// An endpoint behind basic auth that also wants a key in the query string.
		proxy = await startRpcProxy(anvil.url, { auth: { user: USER, password: PASSWORD } });
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
			env: {
				RPC_URL_ANVIL_LOCAL: `http://${USER}:${PASSWORD}@127.0.0.1:${proxy.port}/v2/?apikey=${API_KEY}`,
				WATCHER_POLL_MS: "50",
				WATCHER_RECONCILE_MS: "0",
				WATCHER_RPC_TIMEOUT_MS: "2000",
				SWEEP_POLL_MS: "100",
			},
			logs,
		});
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await proxy?.stop();
		await anvil?.stop();
	});

	it("reads blocks through http://user:pass@host, and no log line carries the password or the key when the provider answers 502 quoting the URL", async () => {
		const { key } = await sandboxMerchant(node);
		// Paid and credited: the watcher read the blocks through the authenticated endpoint.
		const c = await openCheckout(node, key, { amount: "0.2", currency: "eth", tokenId: ETH, networkId: NET });
		await (await anvil.accounts[2].sendTransaction({ to: c.address, value: parseEther("0.2") })).wait();
		await until("credited", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 60_000);
		// The settled checkout has no destination: each sweeper step still reads its balance on chain.
		const sweeperWarned = () => logs.some(l => /Sweeper step failed|Sweep /.test(l.text) && /502/.test(l.text));
		const watcherWarned = () => logs.some(l => /watcher/i.test(`${l.mod} ${l.text}`) && /502/.test(l.text));
		proxy.failNext(1_000_000, 502, { echoUrl: true });
		try {
			await until("the watcher and the sweeper logged the 502", () => sweeperWarned() && watcherWarned(), 60_000, () => logs.slice(-20).map(l => `${l.mod}: ${l.text}`).join("\n"));
		} finally {
			proxy.failNext(0);
		}
		const leaked = logs.filter(l => l.text.includes(PASSWORD) || l.text.includes(API_KEY));
		expect(leaked).toEqual([]);
		// The provider's error page quoting the URL was logged, scrubbed: not only a status code.
		expect(logs.some(l => l.mod === "sweeper-evm" && l.text.includes("Bad Gateway: upstream error for POST http://127.0.0.1"))).toBe(true);
	}, 180_000);
});
