/**
 * A catalogue change reaching running watchers and sweepers (issue 25 item 1), on a cluster of real
 * node processes as deployed: a gateway node (`api`), a core node (the deployed core group), two
 * `watcher-evm` nodes and a `sweeper-evm` node against anvil, on one MySQL database, over the
 * Kafka-protocol mock broker (kcat).
 *
 * The cluster starts with the local chain's test USDC not deployed (no TEST_USDC_ADDRESS: the
 * token is inactive) and anvil-local requiring OLD_CONFIRMATIONS. While the watchers run (one
 * leads the network), the operator deploys the token and rolls the core node with
 * TEST_USDC_ADDRESS set and REQUIRED_CONFIRMATIONS_ANVIL_LOCAL=NEW_CONFIRMATIONS: the new core's
 * networks service seeds the database and broadcasts networks.catalogue.changed. Right after the
 * API accepts a USDC checkout, the payer pays it. The payment must complete with exactly one
 * credit, with no watcher restart and no rewind; what the payer sees while it confirms (the pay
 * page's status, /pay/:slug/status, and GET /payments/transactions/:id) counts against the new
 * requirement, which is also the one the watcher applies (it credits at NEW_CONFIRMATIONS, not
 * before); and the sweeper, also running since before the change, sweeps the USDC to the
 * merchant's withdrawal address. Then the operator's other way: the token switched off and on
 * again in the database followed by `call networks.seed` (the REPL); the next payment completes
 * the same way.
 *
 * The catalogue variables are given to the core node only (the database is their one source):
 * the watcher and sweeper nodes get their RPC URL and their own settings.
 *
 * MySQL only: several processes on one SQLite file is not a supported deployment.
 */
import { Contract, parseUnits, Wallet } from "ethers";
import { deploySweepContracts } from "../../lib/chains/evm/sweep";
import { money } from "../../lib/money";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { payState, PayState, StatusPayload } from "../../web/pay/state";
import { deployTestUsdc, freePort, startAnvil, Anvil } from "../helpers/anvil";
import { BACKEND, TestNode } from "../helpers/harness";
import { KafkaMock, kcatAvailable, startKafkaMock } from "../helpers/kafka-mock";
import { until } from "../helpers/until";
import { openCheckout, sandboxMerchant, OpenedCheckout } from "../e2e/payments.helpers";
import type { UserWithToken } from "../helpers/users";
import { DEPLOYED_CORE_SERVICES, ProcessCluster, uniqueId } from "./cluster.helpers";

const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");
/** anvil-local's requirement before the change; above the new one, so a watcher still applying it would show "4 of 3". */
const OLD_CONFIRMATIONS = 6;
const NEW_CONFIRMATIONS = 3;
const SWEEPER = 5;

const skipReason =
	BACKEND !== "mysql"
		? "MySQL project only: several processes share one database (SQLite is one process per file)"
		: !kcatAvailable()
			? "`kcat` is not installed (apt-get install kcat); CI installs it"
			: null;
const describeCluster = skipReason ? describe.skip : describe;
if (skipReason) console.warn(`catalogue change on a running cluster: skipped (${skipReason})`);

describeCluster("a token switched on and confirmations changed while the watchers run, over Kafka (mock broker)", () => {
	let kafka: KafkaMock;
	let anvil: Anvil;
	let observer: TestNode;
	let gateway: TestNode;
	let gatewayPort: number;
	let sweepContracts: { batcher: string; delegate: string };
	const cluster = new ProcessCluster();
	const { procs, output } = cluster;
	const node = cluster.node.bind(cluster);
	const nodesOffering = cluster.nodesOffering.bind(cluster);
	/** Everything each watcher node logged (node-process keeps only the tail). */
	const watcherLogs = new Map<string, string>();

	const cursor = () => observer.app.models.ChainCursor.findByPk(NET);

	beforeAll(async () => {
		kafka = await startKafkaMock();
		anvil = await startAnvil();
		// The sweep contracts are there from the start (an operator deploys them with the network); the token is not.
		sweepContracts = await deploySweepContracts(anvil.accounts[SWEEPER]);
		await anvil.setAutomine(false);
		// The mock answers an idle fetch only when its wait is over (real Kafka answers when data comes).
		observer = await cluster.start(uniqueId("catalogue"), { TRANSPORTER: kafka.url, KAFKA_FETCH_MAX_WAIT_MS: "20" });
		gatewayPort = await freePort();
		// The catalogue settings go to the core node, which writes them to the database.
		node("core-1", DEPLOYED_CORE_SERVICES, { REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(OLD_CONFIRMATIONS) });
		await nodesOffering("transactions", 1);
		node("gateway", ["api", "pages"], { PORT: String(gatewayPort) });
		for (const name of ["watcher-a", "watcher-b"]) {
			const w = node(name, ["watcher-evm"], { RPC_URL_ANVIL_LOCAL: anvil.url, WATCHER_POLL_MS: "100", WATCHER_RECONCILE_MS: "0", WATCHER_LEASE_MS: "5000", LOG_LEVEL: "info" });
			watcherLogs.set(name, "");
			const keep = (d: Buffer) => watcherLogs.set(name, watcherLogs.get(name) + d.toString());
			w.child.stdout?.on("data", keep);
			w.child.stderr?.on("data", keep);
		}
		node("sweeper", ["sweeper-evm"], {
			RPC_URL_ANVIL_LOCAL: anvil.url,
			SWEEPER_PRIVATE_KEY: (anvil.accounts[SWEEPER].signer as Wallet).privateKey,
			SWEEP_CONTRACTS_ANVIL_LOCAL: `${sweepContracts.batcher},${sweepContracts.delegate}`,
			SWEEP_POLL_MS: "200",
			SWEEP_LEASE_MS: "2000",
			// One deposit is a batch: the token sweep goes out at once.
			SWEEP_BATCH_SIZE: "1",
		});
		await nodesOffering("api", 1);
		await nodesOffering("watcher-evm", 2);
		await nodesOffering("sweeper-evm", 1);
		gateway = await cluster.gatewayOn(gatewayPort);
		// A watcher leads the network and has its cursor.
		await until("a watcher leading anvil-local", async () => {
			const c = await cursor();
			return c?.leaseOwner && c.blockNumber != null;
		}, 60_000, output);
	}, 240_000);

	afterAll(async () => {
		await cluster.stop();
		await anvil?.stop();
		await kafka?.stop();
	});

	interface Seen {
		/** The pay page's state (web/pay/state.ts) from /pay/:slug/status. */
		page: PayState;
		/** GET /payments/transactions/:id. */
		confirmations: number | null;
		required: number | null;
		status: string;
	}

	/** The first checkout the API accepts in USDC (it refuses them until the token is on everywhere the API asks). */
	async function firstAcceptedCheckout(key: { key: string; secret: string }): Promise<OpenedCheckout> {
		return until("the API to accept a USDC checkout", async () => {
			try {
				return await openCheckout(gateway, key, { amount: "1", currency: "usdc", tokenId: USDC, networkId: NET });
			} catch {
				return null;
			}
		}, 60_000, output);
	}

	/**
	 * Pays 1 USDC at once and mines one block at a time: the payer must see 1 of `required`, 2 of
	 * `required`, ... with the intent still processing, and the intent succeed only with the block
	 * that completes `required`. Returns everything the payer saw (sampled all along) and the
	 * watcher's cursor at each sample.
	 */
	async function payAndConfirm(token: Contract, opened: OpenedCheckout, key: { key: string; secret: string }, required: number): Promise<{ seen: Seen[]; cursors: number[] }> {
		await (token.connect(anvil.accounts[1]) as Contract).transfer(opened.address, parseUnits("1", 6));
		const seen: Seen[] = [];
		const cursors: number[] = [];
		const sample = async (): Promise<Seen | null> => {
			const res = await fetch(`http://127.0.0.1:${gatewayPort}/pay/${opened.slug}/status?transaction=${opened.txId}`);
			const tx = await gateway.http("GET", `/payments/transactions/${opened.txId}`);
			const c = await cursor();
			if (c?.blockNumber != null) cursors.push(c.blockNumber);
			if (res.status !== 200 || tx.status !== 200) return null;
			const s = { page: payState((await res.json()) as StatusPayload), confirmations: tx.body.confirmations as number | null, required: tx.body.requiredConfirmations as number | null, status: tx.body.status as string };
			seen.push(s);
			return s;
		};
		const intentStatus = async () => (await gateway.http("GET", `/payment_intents/${opened.intentId}`, { key })).body?.status;
		// The states the payer went through (consecutive repeats once).
		const detail = () => `seen: ${JSON.stringify(seen.filter((v, i) => i === 0 || JSON.stringify(v) !== JSON.stringify(seen[i - 1])))}\n${output()}`;
		for (let n = 1; n < required; n++) {
			await anvil.mine(1);
			const s = await until(`the payer to see ${n} of ${required} confirmations`, async () => {
				const v = await sample();
				return v?.page.kind === "confirming" && v.page.confirmations === n ? v : null;
			}, n === 1 ? 90_000 : 60_000, detail);
			expect(s.page).toEqual({ kind: "confirming", confirmations: n, required });
			expect([s.confirmations, s.required]).toEqual([n, required]);
			expect(await intentStatus()).toBe("processing");
		}
		await anvil.mine(1);
		await until("the intent succeeded", async () => {
			await sample();
			return (await intentStatus()) === "succeeded";
		}, 60_000, detail);
		await until("the pay page to show it paid", async () => (await sample())?.page.kind === "paid", 30_000, detail);
		// Late duplicates would come within a few watcher polls.
		await new Promise(r => setTimeout(r, 2_000));

		// Never "2 of 1": every confirming state the payer saw counts against the requirement.
		for (const s of seen) {
			if (s.page.kind === "confirming") expect([s.page.confirmations <= s.page.required, s.page.required]).toEqual([true, required]);
			if (s.required !== null) expect(s.required).toBe(required);
			if (s.confirmations !== null && s.status !== "completed") expect(s.confirmations).toBeLessThanOrEqual(required);
		}
		// Exactly one credit; the watcher credited at the requirement (its report's confirmations).
		const { models } = observer.app;
		const credits = await models.TransactionCredit.findAll({ where: { transactionId: opened.txId } });
		expect(credits).toHaveLength(1);
		expect(credits[0]).toMatchObject({ amount: expect.stringMatching(/^1(\.0*)?$/), counted: true });
		expect(await models.Transaction.findByPk(opened.txId)).toMatchObject({ status: "completed", requiredConfirmations: required });
		const transfers = (await models.ChainTransfer.findAll({ where: { networkId: NET } })).filter(t => t.toAddress.toLowerCase() === opened.address.toLowerCase());
		expect(transfers.map(t => [t.tokenId, t.reported, t.reportedConfirmations])).toEqual([[USDC, "credited", required]]);
		return { seen, cursors };
	}

	/** No watcher restart, no rewind: the watcher processes started before the change still run, the cursor only moved forward, nobody replayed blocks. */
	function expectNoRestartNoRewind(cursorBefore: number, cursors: number[]): void {
		for (const name of ["watcher-a", "watcher-b"]) {
			const p = procs.get(name)!;
			expect([name, p.child.exitCode, p.child.signalCode]).toEqual([name, null, null]);
		}
		expect(cursors.length).toBeGreaterThan(0);
		expect(cursors[0]).toBeGreaterThanOrEqual(cursorBefore);
		expect(cursors.every((b, i) => i === 0 || b >= cursors[i - 1])).toBe(true);
		for (const log of watcherLogs.values()) expect(log).not.toMatch(/rewound/);
	}

	let token: Contract;
	let merchant: { user: UserWithToken; key: { key: string; secret: string } };

	it("a USDC payment made right after the token is switched on (core rolled with the new configuration) completes once, counted against the new confirmations, and is swept", async () => {
		const { models } = observer.app;
		// Before: the token has no contract (inactive), the network the old requirement; the API refuses USDC.
		expect(await models.Token.findByPk(USDC)).toMatchObject({ isActive: false, contractAddress: "" });
		expect(await models.Network.findByPk(NET)).toMatchObject({ requiredConfirmations: OLD_CONFIRMATIONS });
		merchant = await sandboxMerchant(gateway);
		const { user, key } = merchant;
		const destination = Wallet.createRandom().address;
		expect((await gateway.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination }, strategy: 1 } })).status).toBe(200);
		const refused = await gateway.http("POST", "/payment_intents", { key, body: { amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: USDC, networkId: NET, return_url: "https://shop.example.com/r" } });
		expect(refused.status).toBe(400);
		expect(refused.body.errors).toMatchObject({ tokenId: "tokenNotDeployed" });
		const cursorBefore = (await cursor())!.blockNumber!;

		// The operator deploys the token and rolls the core node with the new configuration: the
		// new node seeds the database and broadcasts networks.catalogue.changed; the old one stops.
		token = await deployTestUsdc(anvil, [1]);
		node("core-2", DEPLOYED_CORE_SERVICES, { TEST_USDC_ADDRESS: await token.getAddress(), REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(NEW_CONFIRMATIONS) });
		await nodesOffering("transactions", 2);
		await procs.get("core-1")!.stop();
		await nodesOffering("transactions", 1);
		expect(await models.Token.findByPk(USDC)).toMatchObject({ isActive: true, contractAddress: await token.getAddress() });
		expect(await models.Network.findByPk(NET)).toMatchObject({ requiredConfirmations: NEW_CONFIRMATIONS });

		const opened = await firstAcceptedCheckout(key);
		const { cursors } = await payAndConfirm(token, opened, key, NEW_CONFIRMATIONS);
		expectNoRestartNoRewind(cursorBefore, cursors);

		// The sweeper, also running since before the change, sweeps the USDC to the merchant's address
		// (a block now and then: automine is off, so its transactions and their confirmations need them).
		const sweep = await until("the USDC swept to the withdrawal address", async () => {
			await anvil.mine(1);
			await new Promise(r => setTimeout(r, 300));
			if (((await token.balanceOf(destination)) as bigint) !== parseUnits("1", 6)) return null;
			const done = await models.Sweep.findAll({ where: { networkId: NET, tokenId: USDC, status: "confirmed" } });
			// An EIP-7702 batch: sent from the sweeper's wallet, the deposit is one of its items.
			return done.find(s => s.toAddress.toLowerCase() === destination.toLowerCase()) ?? null;
		}, 90_000, output);
		expect(sweep.kind).toBe("batch7702");
		expect((await token.balanceOf(opened.address)) as bigint).toBe(0n);
		// `call sweeper-evm.status` (the REPL) lists it.
		const status = (await observer.broker.call("sweeper-evm.status")) as Array<{ networkId: string; sweeps: Array<{ id: string; status: string }> }>;
		expect(status.find(s => s.networkId === NET)?.sweeps).toEqual(expect.arrayContaining([expect.objectContaining({ id: sweep.id, status: "confirmed" })]));
		await until("the ledger at zero", async () => {
			const b = (await observer.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId: USDC })) as { balance: string };
			return money(b.balance).isZero();
		}, 30_000, output);
	}, 360_000);

	it("a token switched off and on again in the database with `call networks.seed` (the REPL's way) is watched again for the next payment", async () => {
		expect(token).toBeDefined();
		const { models } = observer.app;
		const { key } = merchant;
		const cursorBefore = (await cursor())!.blockNumber!;
		const asked = () => gateway.http("POST", "/payment_intents", { key, body: { amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: USDC, networkId: NET, return_url: "https://shop.example.com/r" } });

		await models.Token.update({ isActive: false }, { where: { id: USDC } });
		await observer.broker.call("networks.seed");
		const refused = await until("the API to refuse USDC", async () => {
			const r = await asked();
			return r.status === 400 ? r : null;
		}, 30_000, output);
		expect(refused.body.errors).toMatchObject({ tokenId: "tokenInactive" });
		// Some blocks while it is off.
		await anvil.mine(3);

		await models.Token.update({ isActive: true }, { where: { id: USDC } });
		await observer.broker.call("networks.seed");
		const opened = await firstAcceptedCheckout(key);
		const { cursors } = await payAndConfirm(token, opened, key, NEW_CONFIRMATIONS);
		expectNoRestartNoRewind(cursorBefore, cursors);
	}, 240_000);
});
