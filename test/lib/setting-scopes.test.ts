/**
 * Where a setting acts (lib/setting-scopes.ts): the scopes name exactly the variables the code
 * reads, and a node given a variable it does not act on says so once at start. Over NATS, a core
 * node (networks) and a watcher node on one database: the watcher's catalogue settings are
 * reported with the core's values, which are the ones the watcher is given.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../../lib/config";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { actsOn, CATALOGUE_SCOPE, CHAIN_SCOPE, misplacedSettings, scopeOf, unknownNetworkSettings } from "../../lib/setting-scopes";
import { availableServices } from "../../lib/node";
import type { WatchableNetwork } from "../../services/networks.service";
import { LogLine, startNode, TestNode } from "../helpers/harness";

const ROOT = path.resolve(__dirname, "../..");
const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const SECRETS = { AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) };
const CORE_USDC = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
const WATCHER_USDC = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";

describe("setting scopes", () => {
	it("name exactly the watcher and sweeper variables the configuration reads, and the catalogue's", () => {
		// Every WATCHER_/SWEEP_/RPC_/EIP7702_/REQUIRED_CONFIRMATIONS_ name or prefix the parsers read.
		const read = (file: string) =>
			[...fs.readFileSync(path.join(ROOT, file), "utf8").matchAll(/(?:"|env\.)((?:WATCHER|SWEEP|SWEEPER|RPC|EIP7702|REQUIRED_CONFIRMATIONS)_[A-Z0-9_]*)\b/g)].map(m => m[1]);
		const literals = new Set([...read("lib/watchers/config.ts"), ...read("lib/sweeps/config.ts")]);
		const scoped = new Set([...CHAIN_SCOPE.names, ...CHAIN_SCOPE.prefixes, ...CATALOGUE_SCOPE.prefixes]);
		expect([...literals].sort()).toEqual([...scoped].sort());
		expect(fs.readFileSync(path.join(ROOT, "lib/config.ts"), "utf8")).toContain('"TEST_USDC_ADDRESS"');
		// Each exact name is really parsed: a malformed value stops the node naming it.
		for (const name of [...CHAIN_SCOPE.names, ...CATALOGUE_SCOPE.names]) expect(() => loadConfig({ ...SECRETS, [name]: "not-a-value" })).toThrow(name);
		for (const s of [...CHAIN_SCOPE.services, ...CATALOGUE_SCOPE.services]) expect(availableServices()).toHaveProperty(s);
	});

	it("are the table docs/deployment.md \"Where each variable goes\" gives, which the warnings point to", () => {
		const doc = fs.readFileSync(path.join(ROOT, "docs/deployment.md"), "utf8");
		const section = doc.split(/^## Where each variable goes$/m)[1]?.split(/^## /m)[0] ?? "";
		const wanted = [
			...CATALOGUE_SCOPE.names,
			...CATALOGUE_SCOPE.prefixes.map(p => `${p}<SLUG>`),
			...CHAIN_SCOPE.prefixes.map(p => `${p}<SLUG>`),
			"WATCHER_*",
			"SWEEP_*",
			"SWEEPER_PRIVATE_KEY",
		];
		for (const name of wanted) expect([name, section.includes(`\`${name}\``)]).toEqual([name, true]);
	});

	it("tell which node acts on a variable", () => {
		expect(scopeOf("REQUIRED_CONFIRMATIONS_ETHEREUM")).toBe(CATALOGUE_SCOPE);
		expect(scopeOf("TEST_USDC_ADDRESS")).toBe(CATALOGUE_SCOPE);
		for (const name of ["RPC_URL_BASE", "RPC_COOKIE_FILE_BITCOIN", "WATCHER_POLL_MS", "WATCHER_START_BLOCK_BASE", "SWEEP_CONTRACTS_BASE", "EIP7702_POLYGON", "SWEEPER_PRIVATE_KEY", "SWEEP_POLL_MS"]) {
			expect([name, scopeOf(name)]).toEqual([name, CHAIN_SCOPE]);
		}
		// Acts wherever it is read; and names the code does not read (a Kubernetes service's WATCHER_EVM_SERVICE_HOST) are nobody's.
		for (const name of ["DATABASE_URL", "KAFKA_FETCH_MAX_WAIT_MS", "WATCHER_EVM_SERVICE_HOST", "RPC_URL_", "SWEEPERS"]) expect([name, scopeOf(name)]).toEqual([name, null]);
		expect(actsOn("REQUIRED_CONFIRMATIONS_ETHEREUM", ["watcher-evm"])).toBe(false);
		expect(actsOn("REQUIRED_CONFIRMATIONS_ETHEREUM", ["auth", "networks"])).toBe(true);
		expect(actsOn("RPC_URL_ETHEREUM", ["sweeper-evm", "sweeper-bitcoin"])).toBe(true);
		expect(actsOn("RPC_URL_ETHEREUM", ["networks", "transactions"])).toBe(false);
		expect(actsOn("LOG_LEVEL", ["api"])).toBe(true);
	});

	it("find the set variables a node does not act on: none on a node running everything, empty values ignored", () => {
		const env = { REQUIRED_CONFIRMATIONS_BASE: "5", TEST_USDC_ADDRESS: CORE_USDC, RPC_URL_BASE: "https://x.example", WATCHER_POLL_MS: "", SWEEP_POLL_MS: "100", PORT: "3000" };
		expect(misplacedSettings(env, Object.keys(availableServices()))).toEqual([]);
		expect(misplacedSettings(env, ["watcher-evm"])).toEqual([{ scope: CATALOGUE_SCOPE, names: ["REQUIRED_CONFIRMATIONS_BASE", "TEST_USDC_ADDRESS"] }]);
		expect(misplacedSettings(env, ["api"])).toEqual([
			{ scope: CATALOGUE_SCOPE, names: ["REQUIRED_CONFIRMATIONS_BASE", "TEST_USDC_ADDRESS"] },
			{ scope: CHAIN_SCOPE, names: ["RPC_URL_BASE", "SWEEP_POLL_MS"] },
		]);
		expect(misplacedSettings(env, ["networks", "sweeper-evm"])).toEqual([]);
	});

	it("find per-network variables whose slug names no network of the catalogue, on the nodes that read them", () => {
		const env = { REQUIRED_CONFIRMATIONS_ETH: "64", REQUIRED_CONFIRMATIONS_ETHEREUM: "20", RPC_URL_BASE_SEPOLIA: "https://x.example", RPC_URL_BASE_SEPOLA: "https://x.example", EIP7702_POLYGON: "false", SWEEP_CONTRACTS_NOPE: "" };
		expect(unknownNetworkSettings(env, ["networks"])).toEqual(["REQUIRED_CONFIRMATIONS_ETH"]);
		expect(unknownNetworkSettings(env, ["watcher-evm"])).toEqual(["RPC_URL_BASE_SEPOLA"]);
		expect(unknownNetworkSettings(env, ["api"])).toEqual([]);
	});
});

describe("a node given settings it does not act on", () => {
	const namespace = `scopes-${crypto.randomBytes(4).toString("hex")}`;
	const nats = { TRANSPORTER: NATS_URL, NAMESPACE: namespace };
	const coreLogs: LogLine[] = [];
	const watcherLogs: LogLine[] = [];
	let core: TestNode;
	let watcher: TestNode | null = null;

	beforeAll(async () => {
		// The core applies 3 confirmations on the local chain and its test token's address.
		// transactions too: the watcher waits for both before it starts.
		core = await startNode({ services: ["networks", "transactions"], logs: coreLogs, env: { ...nats, REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "3", REQUIRED_CONFIRMATIONS_ANVIL: "9", TEST_USDC_ADDRESS: CORE_USDC } });
	});
	afterAll(async () => {
		await watcher?.stop();
		await core?.stop();
	});

	const misplaced = (logs: LogLine[]) => logs.filter(l => l.level === "warn" && /is set on this node|are set on this node/.test(l.text));

	it("a watcher node reports the catalogue settings it was given, once, with the core's values, which are the ones it is given", async () => {
		watcher = await startNode({
			shareWith: core,
			services: ["watcher-evm"],
			logs: watcherLogs,
			env: { ...nats, REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "7", TEST_USDC_ADDRESS: WATCHER_USDC, WATCHER_POLL_MS: "200" },
		});
		const lines = misplaced(watcherLogs);
		expect(lines.map(l => l.text)).toEqual([
			`REQUIRED_CONFIRMATIONS_ANVIL_LOCAL, TEST_USDC_ADDRESS are set on this node, but only ${CATALOGUE_SCOPE.where} applies them: it writes them into the database, which every node reads the catalogue from. This node runs no networks service and ignores them. ` +
				`In effect: REQUIRED_CONFIRMATIONS_ANVIL_LOCAL 3 (this node's: 7); TEST_USDC_ADDRESS ${CORE_USDC} (this node's: ${WATCHER_USDC}). Set them on the core nodes (docs/deployment.md "Where each variable goes").`,
		]);
		// The core acts on them: no such line there; only its misspelt one is reported.
		expect(misplaced(coreLogs)).toEqual([]);
		expect(coreLogs.filter(l => l.level === "warn" && l.text.includes("no network of the catalogue")).map(l => l.text)).toEqual([
			"REQUIRED_CONFIRMATIONS_ANVIL names no network of the catalogue and does nothing: the part after the prefix must be a network's slug in upper case with _ for - (ETHEREUM, BASE_SEPOLIA; docs/networks.md).",
		]);

		// What applies is the core's: in the database, and in what the watcher reads to follow the network.
		expect((await core.app.models.Network.findByPk(networkIdFor("anvil-local")))!.requiredConfirmations).toBe(3);
		expect((await core.app.models.Token.findByPk(tokenIdFor("anvil-local", "USDC")))!.contractAddress).toBe(CORE_USDC);
		await watcher.broker.waitForServices(["networks"], 30_000);
		const watchable = (await watcher.broker.call("networks.watchable", { chainType: "evm" })) as WatchableNetwork[];
		const local = watchable.find(n => n.slug === "anvil-local")!;
		expect(local.requiredConfirmations).toBe(3);
		expect(local.tokens.find(t => t.symbol === "USDC")!.contractAddress).toBe(CORE_USDC);
		// Said once: the watcher's refreshes do not repeat it.
		expect(misplaced(watcherLogs)).toHaveLength(1);
	});

	it("a node without watchers or sweepers names the chain settings it was given, never their values", async () => {
		const logs: LogLine[] = [];
		const key = "ab".repeat(32);
		const other = await startNode({
			shareWith: core,
			services: ["api"],
			logs,
			env: { RPC_URL_ANVIL_LOCAL: "http://user:rpc-secret@127.0.0.1:8545", WATCHER_POLL_MS: "200", SWEEPER_PRIVATE_KEY: key, REQUIRED_CONFIRMATIONS_ETHEREUM: "40" },
		});
		try {
			const lines = misplaced(logs).map(l => l.text);
			expect(lines).toHaveLength(2);
			expect(lines[0]).toMatch(/^REQUIRED_CONFIRMATIONS_ETHEREUM is set on this node, but only the node running the networks service \(the core group\) applies it: .*In effect: REQUIRED_CONFIRMATIONS_ETHEREUM 12 \(this node's: 40\)\./);
			expect(lines[1]).toBe(
				`RPC_URL_ANVIL_LOCAL, SWEEPER_PRIVATE_KEY, WATCHER_POLL_MS are set on this node, but only ${CHAIN_SCOPE.where} use them. This node runs none of those services and ignores them. Remove them here (docs/deployment.md "Where each variable goes").`,
			);
			for (const secret of ["rpc-secret", key]) expect(logs.some(l => l.text.includes(secret))).toBe(false);
		} finally {
			await other.stop();
		}
	});
});
