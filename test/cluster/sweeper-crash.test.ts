/**
 * kill -9 of the sweeper between signing and recording the outcome: its sweep was signed and
 * recorded, the node got it and mined it, but the process never heard back (a proxy swallows the
 * answer) and dies. The restarted sweeper sends the same bytes again (harmless), finds the receipt
 * and records the sweep once: nothing is sent twice and the ledger equals what the chain holds.
 * Runs on the mysql project: the processes share one database.
 */
import { Contract, formatUnits, parseEther, Wallet } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { BACKEND, TestNode } from "../helpers/harness";
import { startNodeProcess, NodeProcess } from "../helpers/node-process";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { until } from "../helpers/until";
import { createMerchant, startPaymentsNode, PAYMENTS_SERVICES, Merchant } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const SWEEPER = 5;

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("sweeper crash: runs on the mysql project (several processes share one database)");

describeMysql("EVM sweeper killed between signing and recording", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;
	let node: TestNode;
	let token: Contract;
	let merchant: Merchant;
	const procs: NodeProcess[] = [];
	const destination = Wallet.createRandom().address;

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		await anvil.setAutomine(true);
		proxy = await startRpcProxy(anvil.url);
		// The gateway, payments, watcher and ledger here; the sweeper in child processes.
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals"],
			env: { RPC_URL_ANVIL_LOCAL: anvil.url, TEST_USDC_ADDRESS: await token.getAddress(), WATCHER_POLL_MS: "100", WATCHER_RECONCILE_MS: "0" },
		});
		merchant = await createMerchant(node);
		expect((await node.http("PUT", "/withdrawals/settings", { token: merchant.token, body: { addresses: { evm: destination } } })).status).toBe(200);
	}, 120_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await node?.stop();
		await proxy?.stop();
		await anvil?.stop();
	});

	const sweeperProcess = (name: string, rpcUrl: string) => {
		const p = startNodeProcess({
			DATABASE_URL: node.config.databaseUrl,
			DATA_DIR: node.dataDir,
			SERVICES: "networks,transactions,withdrawals,sweeper-evm",
			NODE_ID: name,
			RPC_URL_ANVIL_LOCAL: rpcUrl,
			TEST_USDC_ADDRESS: node.config.testUsdcAddress ?? "",
			SWEEPER_PRIVATE_KEY: (anvil.accounts[SWEEPER].signer as Wallet).privateKey,
			SWEEP_POLL_MS: "200",
			SWEEP_LEASE_MS: "2000",
			SWEEP_MIN_VALUE_MULTIPLE: "2",
		});
		procs.push(p);
		return p;
	};

	it("sends the same bytes again after the restart and records the sweep once", async () => {
		const created = await node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: { amount: "0.6", currency: "eth", payment_method_types: ["crypto"], tokenId: ETH, networkId: NET, return_url: "https://shop.example.com/r" } });
		const slug = created.body.paymentLink.link.split("/pay/")[1];
		const checkout = (await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} })).body;
		await (await anvil.accounts[2].sendTransaction({ to: checkout.depositAddress, value: parseEther("0.6") })).wait();
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${checkout.id}`)).body.status === "completed", 30_000);

		// The first sweeper's broadcast reaches the node (and is mined), its answer never comes back.
		proxy.swallowAnswers("eth_sendRawTransaction");
		const first = sweeperProcess("sweeper-a", proxy.url);
		await until("sweep mined", async () => (await anvil.provider.getBalance(destination)) > 0n, 60_000, first.output);
		const received = await anvil.provider.getBalance(destination);
		const signed = (await node.app.models.Sweep.findOne({ where: { kind: "native" } }))!;
		// Recorded as signed (bytes and hash) before it went out; the broadcast's outcome was never recorded.
		expect(signed.status).toBe("signed");
		expect(await anvil.provider.getTransactionReceipt(signed.txHash!)).not.toBeNull();
		await first.kill();

		const second = sweeperProcess("sweeper-b", anvil.url);
		const done = await until("sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { id: signed.id, status: "confirmed" } }), 60_000, second.output);
		await new Promise(r => setTimeout(r, 1500));
		// Sent once: the destination got exactly what the first (and only) transaction carried.
		expect(await anvil.provider.getBalance(destination)).toBe(received);
		expect(await node.app.models.Sweep.count()).toBe(1);
		expect(done.hashes).toEqual([signed.txHash]);
		const left = await anvil.provider.getBalance(checkout.depositAddress);
		const ledger = (await node.broker.call("withdrawals.balance", { organizationId: merchant.sandbox.id, networkId: NET, tokenId: ETH })) as { balance: string };
		expect(money(ledger.balance).eq(money(formatUnits(left, 18)))).toBe(true);
		await second.stop();
	}, 180_000);
});
