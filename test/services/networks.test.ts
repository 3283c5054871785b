/**
 * Networks and tokens over HTTP: the seeded catalogue, the list filters and their errors, tokens
 * by network, seed idempotency across restarts and nodes, and the internal look-ups other services
 * use (resolvePair with the mode rule, getToken, getNetwork).
 */
import crypto from "node:crypto";
import { getAddress } from "ethers";
import { startNode, TestNode } from "../helpers/harness";
import { CATALOGUE, CHAIN_TYPES, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { seedCatalogue } from "../../lib/networks/seed";
import { WATCHED_GRACE_MS } from "../../lib/watchers/watched";
import { until } from "../helpers/until";
import { watchNetworks } from "../helpers/watched";

const NETWORK_KEYS = [
	"blockExplorerUrl", "chainId", "chainType", "createdAt", "deletedAt", "id", "image", "isActive", "isTestnet",
	"listenerConfig", "name", "publicRpcUrls", "requiredConfirmations", "updatedAt",
].sort();
/** The list adds `watched` (our addition: a chain watcher follows the network; docs/networks.md "Watched"). */
const LISTED_KEYS = [...NETWORK_KEYS, "watched"].sort();
const TOKEN_KEYS = ["contractAddress", "createdAt", "decimals", "deletedAt", "id", "image", "isActive", "isNative", "isStablecoin", "name", "networkId", "symbol", "updatedAt"].sort();
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const totalTokens = CATALOGUE.reduce((sum, n) => sum + n.tokens.length, 0);
const slugOf = new Map(CATALOGUE.map(n => [networkIdFor(n.slug), n.slug]));

describe("networks", () => {
	let node: TestNode;

	const list = (query?: Record<string, string>) => node.http("GET", "/payments/networks", { query });
	const tokensOf = (id: string, query?: Record<string, string>) => node.http("GET", `/payments/networks/${encodeURIComponent(id)}/tokens`, { query });
	const resolvePair = (params: Record<string, unknown>) => node.broker.call("networks.resolvePair", params) as Promise<any>;
	/** What the catalogue-changed broadcast runs on every node: the broker cache and the in-memory look-ups. */
	const clearCache = () => (node.broker.getLocalService("networks") as unknown as { clearCache(): Promise<void> }).clearCache();

	beforeAll(async () => {
		node = await startNode({ services: ["api", "networks"] });
	});
	afterAll(async () => {
		await node?.stop();
	});

	describe("GET /payments/networks", () => {
		it("lists the whole seeded catalogue, publicly, in the spec's shape", async () => {
			const res = await list();
			expect(res.status).toBe(200);
			expect(res.body).toHaveLength(CATALOGUE.length);
			expect(res.body.map((n: any) => slugOf.get(n.id)).sort()).toEqual(CATALOGUE.map(n => n.slug).sort());
			for (const n of res.body) {
				const entry = CATALOGUE.find(c => networkIdFor(c.slug) === n.id)!;
				expect(Object.keys(n).sort()).toEqual(LISTED_KEYS);
				expect(n).toMatchObject({
					name: entry.name,
					chainType: entry.chainType,
					chainId: entry.chainId,
					blockExplorerUrl: entry.blockExplorerUrl,
					publicRpcUrls: entry.publicRpcUrls,
					isTestnet: entry.isTestnet,
					isActive: true,
					listenerConfig: entry.listenerConfig,
					requiredConfirmations: entry.requiredConfirmations,
					image: null,
					deletedAt: null,
					// No watcher runs on this node's database.
					watched: false,
				});
				expect(n.createdAt).toMatch(ISO);
				expect(n.updatedAt).toMatch(ISO);
			}
			// Listing is stable on every backend: by name, case-insensitively.
			const names = res.body.map((n: any) => n.name.toLowerCase());
			expect(names).toEqual([...names].sort());
		});

		it("keeps chain ids exact, including negative and beyond-32-bit ones", async () => {
			const res = await list();
			const byId = new Map(res.body.map((n: any) => [n.id, n]));
			expect((byId.get(networkIdFor("ton")) as any).chainId).toBe(-239);
			expect((byId.get(networkIdFor("tron-nile")) as any).chainId).toBe(3448148188);
			expect((byId.get(networkIdFor("anvil-local")) as any)).toMatchObject({ name: "Anvil (local)", chainId: 31337, isTestnet: true, requiredConfirmations: 1, publicRpcUrls: ["http://127.0.0.1:8545"] });
		});

		it("filters by testnet", async () => {
			const test = await list({ testnet: "true" });
			const main = await list({ testnet: "false" });
			expect(test.status).toBe(200);
			expect(main.status).toBe(200);
			expect(test.body.every((n: any) => n.isTestnet === true)).toBe(true);
			expect(main.body.every((n: any) => n.isTestnet === false)).toBe(true);
			expect(test.body).toHaveLength(CATALOGUE.filter(n => n.isTestnet).length);
			expect(main.body).toHaveLength(CATALOGUE.filter(n => !n.isTestnet).length);
		});

		it("filters by every chain type, alone and combined with testnet", async () => {
			for (const chainType of CHAIN_TYPES) {
				const res = await list({ chainType });
				expect(res.status).toBe(200);
				expect(res.body.map((n: any) => slugOf.get(n.id)).sort()).toEqual(CATALOGUE.filter(n => n.chainType === chainType).map(n => n.slug).sort());
				for (const testnet of [true, false]) {
					const both = await list({ chainType, testnet: String(testnet) });
					expect(both.status).toBe(200);
					const expected = CATALOGUE.filter(n => n.chainType === chainType && n.isTestnet === testnet).map(n => n.slug).sort();
					expect(expected.length).toBeGreaterThan(0);
					expect(both.body.map((n: any) => slugOf.get(n.id)).sort()).toEqual(expected);
				}
			}
		});

		it("filters by active, alone and with the other filters; the seed keeps an operator's switch-off", async () => {
			const { Network } = node.app.models;
			expect((await list({ active: "true" })).body.map((n: any) => n.id)).toContain(networkIdFor("polygon-amoy"));
			await Network.update({ isActive: false }, { where: { id: networkIdFor("polygon-amoy") } });
			try {
				// Reads are cached for 60 s; `networks.seed` clears the caches even when nothing changed,
				// and does not switch the operator's choice back on.
				expect((await list({ active: "true" })).body.map((n: any) => n.id)).toContain(networkIdFor("polygon-amoy"));
				expect(await node.broker.call("networks.seed", {})).toMatchObject({ changed: false });
				expect((await Network.findByPk(networkIdFor("polygon-amoy")))!.isActive).toBe(false);

				const active = await list({ active: "true" });
				expect(active.status).toBe(200);
				expect(active.body.map((n: any) => n.id)).not.toContain(networkIdFor("polygon-amoy"));
				expect(active.body).toHaveLength(CATALOGUE.length - 1);
				expect(active.body.every((n: any) => n.isActive)).toBe(true);
				// Only `true` filters; `false` and no value list everything.
				for (const query of [{ active: "false" }, undefined]) {
					const all = await list(query);
					expect(all.body).toHaveLength(CATALOGUE.length);
					expect(all.body.find((n: any) => n.id === networkIdFor("polygon-amoy")).isActive).toBe(false);
				}
				const combo = await list({ active: "true", testnet: "true", chainType: "evm" });
				expect(combo.body.map((n: any) => slugOf.get(n.id)).sort()).toEqual(
					CATALOGUE.filter(n => n.chainType === "evm" && n.isTestnet && n.slug !== "polygon-amoy").map(n => n.slug).sort(),
				);
				const mainEvm = await list({ active: "true", testnet: "false", chainType: "evm" });
				expect(mainEvm.body.map((n: any) => slugOf.get(n.id)).sort()).toEqual(CATALOGUE.filter(n => n.chainType === "evm" && !n.isTestnet).map(n => n.slug).sort());

			} finally {
				await Network.update({ isActive: true }, { where: { id: networkIdFor("polygon-amoy") } });
				await clearCache();
			}
		});

		it("answers 400 naming the field for a bad filter value", async () => {
			const cases: Array<[Record<string, string>, string]> = [
				[{ active: "yes" }, "active"],
				[{ active: "1" }, "active"],
				[{ active: "" }, "active"],
				[{ testnet: "TRUE" }, "testnet"],
				[{ testnet: "0" }, "testnet"],
				[{ chainType: "EVM" }, "chainType"],
				[{ chainType: "ethereum" }, "chainType"],
				[{ chainType: "" }, "chainType"],
			];
			for (const [query, field] of cases) {
				const res = await list(query);
				expect(res.status).toBe(400);
				expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
				expect(Object.keys(res.body.errors)).toEqual([field]);
			}
			// Repeated or nested query values are not strings.
			const repeated = await node.http("GET", "/payments/networks?active=true&active=false");
			expect(repeated.status).toBe(400);
			expect(repeated.body.errors).toHaveProperty("active");
			const nested = await node.http("GET", "/payments/networks?chainType[a]=evm");
			expect(nested.status).toBe(400);
			expect(nested.body.errors).toHaveProperty("chainType");
		});

		it("says which networks a watcher follows: held lease, a restart's grace, then not", async () => {
			const watchedIn = async (query?: Record<string, string>) => (await list(query)).body.filter((n: any) => n.watched).map((n: any) => slugOf.get(n.id)).sort();
			expect(await watchedIn()).toEqual([]);
			// A watcher takes the lease on Base (what lib/watchers/runner.ts does): listed as watched at once (its broadcast).
			const [base] = await watchNetworks(node, ["base"]);
			expect(await watchedIn()).toEqual(["base"]);
			expect(await watchedIn({ testnet: "true" })).toEqual([]);
			expect(await watchedIn({ chainType: "evm", testnet: "false" })).toEqual(["base"]);
			// A graceful stop gives the lease up: still watched (a restart or a standby reads on from the cursor) ...
			await base.release();
			await clearCache();
			expect(await watchedIn()).toEqual(["base"]);
			// ... until WATCHED_GRACE_MS have passed since it was last held (the row as a minute-old release leaves it).
			await node.app.models.ChainCursor.update({ leaseUntil: new Date(Date.now() - WATCHED_GRACE_MS - 1_000) }, { where: { networkId: networkIdFor("base") } });
			await until("Base listed as not watched", async () => (await watchedIn()).length === 0);
		});

		it("ignores unknown query parameters", async () => {
			const res = await list({ page: "2", foo: "bar" });
			expect(res.status).toBe(200);
			expect(res.body).toHaveLength(CATALOGUE.length);
		});
	});

	describe("GET /payments/networks/:id/tokens", () => {
		it("lists each network's tokens, natives first, with a native on every network", async () => {
			for (const entry of CATALOGUE) {
				const res = await tokensOf(networkIdFor(entry.slug));
				expect(res.status).toBe(200);
				expect(res.body.map((t: any) => t.symbol).sort()).toEqual(entry.tokens.map(t => t.symbol).sort());
				expect(res.body[0].isNative).toBe(true);
				expect(res.body.filter((t: any) => t.isNative)).toHaveLength(1);
				for (const t of res.body) {
					const c = entry.tokens.find(x => x.symbol === t.symbol)!;
					expect(Object.keys(t).sort()).toEqual(TOKEN_KEYS);
					expect(t).toMatchObject({
						id: tokenIdFor(entry.slug, c.symbol),
						networkId: networkIdFor(entry.slug),
						name: c.name,
						contractAddress: c.contractAddress ?? "",
						decimals: c.decimals,
						isNative: c.isNative,
						isStablecoin: c.isStablecoin,
						// A contract token with no contract yet (the local chain's test token) is inactive.
						isActive: c.isNative || c.contractAddress !== null,
						image: null,
						deletedAt: null,
					});
					expect(Number.isInteger(t.decimals) && t.decimals >= 0 && t.decimals <= 18).toBe(true);
					expect(t.createdAt).toMatch(ISO);
					if (entry.chainType === "evm" && t.contractAddress !== "") expect(getAddress(t.contractAddress)).toBe(t.contractAddress);
				}
			}
		});

		it("serves the issuers' stablecoins with their decimals (BNB Chain's are 18)", async () => {
			const bnb = await tokensOf(networkIdFor("bnb"));
			expect(bnb.body.find((t: any) => t.symbol === "USDC")).toMatchObject({ contractAddress: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", decimals: 18, isStablecoin: true });
			const eth = await tokensOf(networkIdFor("ethereum"));
			expect(eth.body.find((t: any) => t.symbol === "USDC")).toMatchObject({ contractAddress: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", decimals: 6, isStablecoin: true });
			expect(eth.body.find((t: any) => t.symbol === "ETH")).toMatchObject({ contractAddress: "", decimals: 18, isNative: true, isStablecoin: false });
		});

		it("filters active tokens with active=true and refuses other values", async () => {
			const { Token } = node.app.models;
			const usdt = tokenIdFor("ethereum", "USDT");
			await Token.update({ isActive: false }, { where: { id: usdt } });
			await clearCache();
			try {
				const active = await tokensOf(networkIdFor("ethereum"), { active: "true" });
				expect(active.body.map((t: any) => t.id)).not.toContain(usdt);
				expect(active.body.every((t: any) => t.isActive)).toBe(true);
				const all = await tokensOf(networkIdFor("ethereum"));
				expect(all.body.find((t: any) => t.id === usdt).isActive).toBe(false);
				const bad = await tokensOf(networkIdFor("ethereum"), { active: "maybe" });
				expect(bad.status).toBe(400);
				expect(bad.body.errors).toHaveProperty("active");
			} finally {
				await Token.update({ isActive: true }, { where: { id: usdt } });
				await clearCache();
			}
		});

		it("is 404 for an unknown, malformed or removed network", async () => {
			for (const id of [networkIdFor("no-such-network"), "not-a-uuid", "1", "x".repeat(300), "00000000-0000-0000-0000-000000000000"]) {
				const res = await tokensOf(id);
				expect(res.status).toBe(404);
				expect(res.body).toMatchObject({ statusCode: 404, message: "Network not found", error: "Not Found" });
			}
			const { Network } = node.app.models;
			const id = networkIdFor("ton-testnet");
			await (await Network.findByPk(id))!.destroy();
			await clearCache();
			try {
				expect((await tokensOf(id)).status).toBe(404);
				expect((await list()).body.map((n: any) => n.id)).not.toContain(id);
				// Old payments still resolve it internally.
				const view = (await node.broker.call("networks.getNetwork", { id })) as any;
				expect(view.deletedAt).toMatch(ISO);
			} finally {
				await (await Network.findByPk(id, { paranoid: false }))!.restore();
				await clearCache();
			}
		});
	});

	describe("seeding", () => {
		it("re-runs without duplicating, and restores catalogue facts changed in the database", async () => {
			const { Network, Token } = node.app.models;
			expect(await Network.count({ paranoid: false })).toBe(CATALOGUE.length);
			expect(await Token.count({ paranoid: false })).toBe(totalTokens);

			const again = await seedCatalogue(node.app.models, { production: false });
			expect(again).toEqual({ networksInserted: 0, networksUpdated: 0, tokensInserted: 0, tokensUpdated: 0, changed: false });
			expect(await Network.count({ paranoid: false })).toBe(CATALOGUE.length);
			expect(await Token.count({ paranoid: false })).toBe(totalTokens);

			// A wrong fact is put right by the next seed, and the cached reads are cleared with it.
			expect((await tokensOf(networkIdFor("base"))).status).toBe(200); // primes the cache
			await Token.update({ decimals: 7 }, { where: { id: tokenIdFor("base", "USDC") } });
			await Network.update({ requiredConfirmations: 99 }, { where: { id: networkIdFor("base") } });
			const stale = await tokensOf(networkIdFor("base"));
			expect(stale.body.find((t: any) => t.symbol === "USDC").decimals).toBe(6); // still the cached answer
			const fixed = (await node.broker.call("networks.seed", {})) as any;
			expect(fixed).toMatchObject({ networksUpdated: 1, tokensUpdated: 1, networksInserted: 0, tokensInserted: 0, changed: true });
			expect((await Token.findByPk(tokenIdFor("base", "USDC")))!.decimals).toBe(6);
			expect((await list()).body.find((n: any) => n.id === networkIdFor("base")).requiredConfirmations).toBe(10);

			// A deleted row comes back on the next seed.
			await Token.destroy({ where: { id: tokenIdFor("aptos", "USDC") }, force: true });
			const refilled = (await node.broker.call("networks.seed", {})) as any;
			expect(refilled).toMatchObject({ tokensInserted: 1, changed: true });
			expect(await Token.count({ paranoid: false })).toBe(totalTokens);
			expect((await tokensOf(networkIdFor("aptos"))).body.map((t: any) => t.symbol)).toContain("USDC");
		});

		it("a second node on the same database seeds nothing new", async () => {
			const second = await startNode({ shareWith: node, services: ["api", "networks"] });
			try {
				const { Network, Token } = node.app.models;
				expect(await Network.count({ paranoid: false })).toBe(CATALOGUE.length);
				expect(await Token.count({ paranoid: false })).toBe(totalTokens);
				const res = await second.http("GET", "/payments/networks");
				expect(res.status).toBe(200);
				expect(res.body).toHaveLength(CATALOGUE.length);
				// Two nodes seeding at the same moment still leave one row each.
				await Token.destroy({ where: { networkId: networkIdFor("aptos-testnet") }, force: true });
				await Network.destroy({ where: { id: networkIdFor("aptos-testnet") }, force: true });
				await Promise.all([seedCatalogue(node.app.models, { production: false }), seedCatalogue(second.app.models, { production: false })]);
				expect(await Network.count({ paranoid: false })).toBe(CATALOGUE.length);
				expect(await Token.count({ paranoid: false })).toBe(totalTokens);
			} finally {
				await second.stop();
			}
		});

		it("turns the local network off in production and takes the test token's address from TEST_USDC_ADDRESS", async () => {
			const { Network, Token } = node.app.models;
			const anvil = networkIdFor("anvil-local");
			const anvilUsdc = tokenIdFor("anvil-local", "USDC");
			try {
				await seedCatalogue(node.app.models, { production: true });
				expect((await Network.findByPk(anvil))!.isActive).toBe(false);
				expect((await Token.findByPk(anvilUsdc))!.contractAddress).toBe("");
				await seedCatalogue(node.app.models, { production: false, testUsdcAddress: "0x5fbdb2315678afecb367f032d93f642f64180aa3" });
				expect((await Token.findByPk(anvilUsdc))!.contractAddress).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
				// Without the variable the stored address stays.
				await seedCatalogue(node.app.models, { production: false });
				expect((await Token.findByPk(anvilUsdc))!.contractAddress).toBe("0x5FbDB2315678afecb367f032d93F642f64180aa3");
			} finally {
				await Network.update({ isActive: true }, { where: { id: anvil } });
				await Token.update({ contractAddress: "", isActive: false }, { where: { id: anvilUsdc } });
				await clearCache();
			}
		});

		it("keeps a contract token without a contract inactive, and activates it when TEST_USDC_ADDRESS gives one at the next start", async () => {
			const { Token } = node.app.models;
			const anvil = networkIdFor("anvil-local");
			const anvilUsdc = tokenIdFor("anvil-local", "USDC");
			const address = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
			const usdcPair = { networkId: anvil, tokenId: anvilUsdc, mode: "sandbox" };
			try {
				// A database seeded before this rule holds the token active with no contract: the next seed puts it right.
				await Token.update({ isActive: true }, { where: { id: anvilUsdc } });
				expect(await node.broker.call("networks.seed", {})).toMatchObject({ tokensUpdated: 1 });
				expect((await tokensOf(anvil)).body.find((t: any) => t.symbol === "USDC")).toMatchObject({ contractAddress: "", isActive: false });
				expect((await tokensOf(anvil, { active: "true" })).body.map((t: any) => t.symbol)).toEqual(["ETH"]);
				await expect(resolvePair(usdcPair)).rejects.toMatchObject({ code: 400, message: "Token is not available yet", data: { errors: { tokenId: "tokenNotDeployed" } } });

				const restarted = await startNode({ shareWith: node, services: ["api", "networks"], env: { TEST_USDC_ADDRESS: address.toLowerCase() } });
				try {
					const listed = await restarted.http("GET", `/payments/networks/${anvil}/tokens`, { query: { active: "true" } });
					expect(listed.body.find((t: any) => t.symbol === "USDC")).toMatchObject({ contractAddress: address, isActive: true });
					const pair = (await restarted.broker.call("networks.resolvePair", usdcPair)) as any;
					expect(pair.token).toMatchObject({ contractAddress: address, isActive: true });
				} finally {
					await restarted.stop();
				}
				// Once it has its contract, isActive is the operator's again: switched off, it stays off.
				await Token.update({ isActive: false }, { where: { id: anvilUsdc } });
				await seedCatalogue(node.app.models, { production: false, testUsdcAddress: address });
				expect((await Token.findByPk(anvilUsdc))!.isActive).toBe(false);
			} finally {
				await Token.update({ contractAddress: "", isActive: false }, { where: { id: anvilUsdc } });
				await clearCache();
			}
		});
	});

	describe("resolvePair", () => {
		it("gives a sandbox organization a test network and its token, with chainType", async () => {
			const pair = await resolvePair({ networkId: networkIdFor("ethereum-sepolia"), tokenId: tokenIdFor("ethereum-sepolia", "USDC"), mode: "sandbox" });
			expect(Object.keys(pair.network).sort()).toEqual(NETWORK_KEYS);
			expect(Object.keys(pair.token).sort()).toEqual(TOKEN_KEYS);
			expect(pair.network).toMatchObject({ id: networkIdFor("ethereum-sepolia"), chainType: "evm", chainId: 11155111, isTestnet: true });
			expect(pair.token).toMatchObject({ symbol: "USDC", decimals: 6, contractAddress: "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238" });
		});

		it("gives a live organization a main network and its token", async () => {
			const pair = await resolvePair({ networkId: networkIdFor("solana"), tokenId: tokenIdFor("solana", "SOL"), mode: "live" });
			expect(pair.network).toMatchObject({ chainType: "solana", isTestnet: false });
			expect(pair.token).toMatchObject({ symbol: "SOL", isNative: true, decimals: 9, contractAddress: "" });
		});

		it("refuses a network of the other mode, both ways", async () => {
			await expect(resolvePair({ networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("ethereum", "USDC"), mode: "sandbox" })).rejects.toMatchObject({
				code: 400,
				message: "Sandbox organizations can only use test networks",
				data: { errors: { networkId: "networkNotAllowedForMode" } },
			});
			await expect(resolvePair({ networkId: networkIdFor("base-sepolia"), tokenId: tokenIdFor("base-sepolia", "USDC"), mode: "live" })).rejects.toMatchObject({
				code: 400,
				message: "Live organizations can only use main networks",
				data: { errors: { networkId: "networkNotAllowedForMode" } },
			});
		});

		it("names what is wrong with the network or the token", async () => {
			const cases: Array<[Record<string, unknown>, Record<string, string>]> = [
				[{ networkId: networkIdFor("nope"), tokenId: tokenIdFor("ethereum", "USDC") }, { networkId: "networkNotFound", tokenId: "tokenNotOnNetwork" }],
				[{ networkId: "garbage", tokenId: "also garbage" }, { networkId: "networkNotFound", tokenId: "tokenNotFound" }],
				[{ networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("ethereum", "DOGE") }, { tokenId: "tokenNotFound" }],
				[{ networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("polygon", "USDC") }, { tokenId: "tokenNotOnNetwork" }],
				[{ networkId: networkIdFor("ethereum-sepolia"), tokenId: tokenIdFor("ethereum", "USDC") }, { networkId: "networkNotAllowedForMode", tokenId: "tokenNotOnNetwork" }],
			];
			for (const [ids, errors] of cases) {
				await expect(resolvePair({ ...ids, mode: "live" })).rejects.toMatchObject({ code: 400, data: { errors } });
			}
		});

		it("refuses inactive networks and tokens, and a test token not deployed yet", async () => {
			const { Network, Token } = node.app.models;
			await Network.update({ isActive: false }, { where: { id: networkIdFor("tron") } });
			await Token.update({ isActive: false }, { where: { id: tokenIdFor("ethereum", "USDT") } });
			await clearCache();
			try {
				await expect(resolvePair({ networkId: networkIdFor("tron"), tokenId: tokenIdFor("tron", "USDT"), mode: "live" })).rejects.toMatchObject({
					code: 400,
					message: "Network is not active",
					data: { errors: { networkId: "networkInactive" } },
				});
				await expect(resolvePair({ networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("ethereum", "USDT"), mode: "live" })).rejects.toMatchObject({
					code: 400,
					data: { errors: { tokenId: "tokenInactive" } },
				});
			} finally {
				await Network.update({ isActive: true }, { where: { id: networkIdFor("tron") } });
				await Token.update({ isActive: true }, { where: { id: tokenIdFor("ethereum", "USDT") } });
				await clearCache();
			}
			await expect(resolvePair({ networkId: networkIdFor("anvil-local"), tokenId: tokenIdFor("anvil-local", "USDC"), mode: "sandbox" })).rejects.toMatchObject({
				code: 400,
				data: { errors: { tokenId: "tokenNotDeployed" } },
			});
			const eth = await resolvePair({ networkId: networkIdFor("anvil-local"), tokenId: tokenIdFor("anvil-local", "ETH"), mode: "sandbox" });
			expect(eth.network).toMatchObject({ chainId: 31337, isTestnet: true });
		});

		it("refuses a live payment on a network no watcher follows, and takes it once one does", async () => {
			const eth = { networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("ethereum", "ETH") };
			const refused = { code: 400, message: "No chain watcher follows this network: it does not accept live payments", data: { errors: { networkId: "networkNotWatched" } } };
			await expect(resolvePair({ ...eth, mode: "live", payment: true })).rejects.toMatchObject(refused);
			// Chain types without any watcher (solana here) are never watched.
			await expect(resolvePair({ networkId: networkIdFor("solana"), tokenId: tokenIdFor("solana", "SOL"), mode: "live", payment: true })).rejects.toMatchObject(refused);
			// Not a payment (a withdrawal request's source network): no watcher needed.
			expect((await resolvePair({ ...eth, mode: "live" })).network.id).toBe(eth.networkId);
			// Sandbox payments take any test network: "Simulate payment" works without a watcher.
			expect((await resolvePair({ networkId: networkIdFor("solana-devnet"), tokenId: tokenIdFor("solana-devnet", "SOL"), mode: "sandbox", payment: true })).network.chainType).toBe("solana");
			const [lease] = await watchNetworks(node, ["ethereum"]);
			try {
				expect((await resolvePair({ ...eth, mode: "live", payment: true })).network.id).toBe(eth.networkId);
			} finally {
				await lease.release();
				await node.app.models.ChainCursor.update({ leaseUntil: new Date(Date.now() - WATCHED_GRACE_MS - 1_000) }, { where: { networkId: eth.networkId } });
				await clearCache();
			}
			await expect(resolvePair({ ...eth, mode: "live", payment: true })).rejects.toMatchObject(refused);
		});

		it("validates its parameters", async () => {
			await expect(resolvePair({ networkId: networkIdFor("ethereum"), tokenId: tokenIdFor("ethereum", "ETH"), mode: "production" })).rejects.toMatchObject({ code: 422, name: "ValidationError" });
			await expect(resolvePair({ networkId: networkIdFor("ethereum"), mode: "live" })).rejects.toMatchObject({ name: "ValidationError" });
		});
	});

	describe("look-up cache", () => {
		const tron = { networkId: networkIdFor("tron"), tokenId: tokenIdFor("tron", "USDT"), mode: "live" };

		it("answers resolvePair, getToken and getNetwork from memory until the catalogue changes", async () => {
			const { Network, Token } = node.app.models;
			const before = await resolvePair(tron);
			const token = (await node.broker.call("networks.getToken", { id: tron.tokenId })) as any;
			const network = (await node.broker.call("networks.getNetwork", { id: tron.networkId })) as any;
			await Network.update({ isActive: false }, { where: { id: tron.networkId } });
			await Token.update({ isActive: false }, { where: { id: tron.tokenId } });
			try {
				// No Redis, no database: the same answers, and they cannot be changed by a caller.
				expect(await resolvePair(tron)).toEqual(before);
				expect(await node.broker.call("networks.getToken", { id: tron.tokenId })).toEqual(token);
				expect(await node.broker.call("networks.getNetwork", { id: tron.networkId })).toEqual(network);
				expect(() => {
					(before.network as { name: string }).name = "changed";
				}).toThrow(TypeError);
				// The seed clears them (and tells every node to).
				await node.broker.call("networks.seed", {});
				await expect(resolvePair(tron)).rejects.toMatchObject({ code: 400, data: { errors: { networkId: "networkInactive" } } });
				expect(((await node.broker.call("networks.getToken", { id: tron.tokenId })) as any).isActive).toBe(false);
				expect(((await node.broker.call("networks.getNetwork", { id: tron.networkId })) as any).isActive).toBe(false);
			} finally {
				await Network.update({ isActive: true }, { where: { id: tron.networkId } });
				await Token.update({ isActive: true }, { where: { id: tron.tokenId } });
				await clearCache();
			}
			expect(await resolvePair(tron)).toMatchObject({ network: { id: tron.networkId, isActive: true }, token: { id: tron.tokenId, isActive: true } });
		});

		it("is cleared on the other nodes by the seed's broadcast (NATS)", async () => {
			// Own namespace: other test runs on the same NATS server never meet these nodes.
			const env = { TRANSPORTER: "nats://127.0.0.1:4222", NAMESPACE: `networks-${crypto.randomBytes(4).toString("hex")}` };
			const first = await startNode({ services: ["networks"], env });
			const second = await startNode({ services: ["networks"], env, shareWith: first });
			try {
				const deadline = Date.now() + 15_000;
				const knows = (a: TestNode, b: TestNode) => a.broker.registry.nodes.list({ onlyAvailable: true }).some((n: { id: string }) => n.id === b.broker.nodeID);
				while (!knows(first, second) || !knows(second, first)) {
					if (Date.now() > deadline) throw new Error("the two nodes never discovered each other");
					await new Promise(r => setTimeout(r, 100));
				}
				// Each node answers its own calls (Moleculer prefers the local service) and keeps its own cache.
				const onSecond = () => second.broker.call("networks.resolvePair", tron);
				await onSecond();
				await first.app.models.Network.update({ isActive: false }, { where: { id: tron.networkId } });
				await expect(onSecond()).resolves.toMatchObject({ network: { id: tron.networkId, isActive: true } });
				await first.broker.call("networks.seed", {});
				let result: unknown = await onSecond().catch(err => err);
				while (!(result instanceof Error) && Date.now() < deadline) {
					await new Promise(r => setTimeout(r, 25));
					result = await onSecond().catch(err => err);
				}
				expect(result).toMatchObject({ code: 400, data: { errors: { networkId: "networkInactive" } } });
			} finally {
				await second.stop();
				await first.stop();
			}
		}, 40_000);
	});

	describe("getToken and getNetwork", () => {
		it("give a token with its network summary, and a network", async () => {
			const token = (await node.broker.call("networks.getToken", { id: tokenIdFor("tron-nile", "USDT") })) as any;
			expect(token).toMatchObject({ symbol: "USDT", decimals: 6, contractAddress: "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", networkId: networkIdFor("tron-nile") });
			expect(token.network).toEqual({ id: networkIdFor("tron-nile"), name: "Tron Nile", chainType: "tron", isTestnet: true, chainId: 3448148188 });
			const network = (await node.broker.call("networks.getNetwork", { id: networkIdFor("cosmoshub") })) as any;
			expect(Object.keys(network).sort()).toEqual(NETWORK_KEYS);
			expect(network.listenerConfig).toMatchObject({ chainKey: "cosmoshub-4" });
		});

		it("are 404 for unknown or malformed ids", async () => {
			for (const id of [tokenIdFor("ethereum", "NOPE"), "not-a-uuid", ""]) {
				await expect(node.broker.call("networks.getToken", { id })).rejects.toMatchObject({ code: 404, message: "Token not found" });
				await expect(node.broker.call("networks.getNetwork", { id })).rejects.toMatchObject({ code: 404, message: "Network not found" });
			}
		});

		it("are not reachable over HTTP", async () => {
			for (const path of ["/networks/getToken", "/networks/resolvePair", "/networks/seed", "/payments/networks/seed"]) {
				const res = await node.http("GET", path);
				expect(res.status).toBe(404);
			}
			expect((await node.http("POST", "/payments/networks", { body: {} })).status).toBe(404);
		});
	});
});
