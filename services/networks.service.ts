/**
 * Networks and tokens: the seeded catalogue (lib/networks/catalogue.ts) and its public reads,
 * GET /payments/networks and GET /payments/networks/:id/tokens. Other services resolve ids with
 * the internal actions `getNetwork`, `getToken` and `resolvePair` (which also enforces the mode
 * rule: sandbox organizations use test networks only, live organizations main networks only).
 * Reads are cached for 60 s; the cache is cleared on every node when the seed changes a row.
 * The internal look-ups sit on the payments hot paths (every intent, link and checkout resolves
 * its pair), so they are cached in this process's memory rather than in the broker's (Redis)
 * cacher: no Redis round trip and no JSON parse per call. Every node running this service keeps
 * its own copy and clears it on the same broadcast as the broker cache. Decisions are in
 * docs/networks.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import type { WhereOptions } from "sequelize";
import { appOf } from "../lib/app";
import { badRequest, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import { CHAIN_TYPES, ChainType } from "../lib/networks/catalogue";
import { MODE_MESSAGES, NETWORK_NOT_ALLOWED_FOR_MODE, ORGANIZATION_MODES, OrganizationMode, isNetworkAllowed } from "../lib/networks/mode";
import { isTokenDeployed, seedCatalogue, SeedResult } from "../lib/networks/seed";
import { ListedNetwork, NetworkView, TokenView, TokenWithNetworkView, networkSummary, networkView, tokenView } from "../lib/networks/view";
import { TtlCache } from "../lib/ttl-cache";
import { watchedTokens } from "../lib/watchers/catalogue";
import { WATCHER_LEADS_EVENT, WatchedCache, watchedNetworkIds } from "../lib/watchers/watched";
import type { Network } from "../models/network.model";
import type { Token } from "../models/token.model";

/** Field error code and message of a live payment on a network no watcher follows (docs/networks.md "Watched"). */
export const NETWORK_NOT_WATCHED = "networkNotWatched";
export const NOT_WATCHED_MESSAGE = "No chain watcher follows this network: it does not accept live payments";

registerTranslations("es", {
	"Network not found": "Red no encontrada",
	"Token not found": "Token no encontrado",
	"Network is not active": "La red no está activa",
	"Token is not active": "El token no está activo",
	"Token does not belong to the network": "El token no pertenece a la red",
	"Token is not available yet": "El token aún no está disponible",
	[MODE_MESSAGES.sandbox]: "Las organizaciones sandbox solo pueden usar redes de prueba",
	[MODE_MESSAGES.live]: "Las organizaciones live solo pueden usar redes principales",
	[NOT_WATCHED_MESSAGE]: "Ningún vigilante de cadena sigue esta red: no acepta pagos reales",
});

/** Every node listens and clears its own caches (the memory cacher and the look-up cache are per node). */
export const CATALOGUE_CHANGED_EVENT = "networks.catalogue.changed";
const CACHE_TTL_SECONDS = 60;
/** Look-up answers kept in memory: found rows only, so at most the catalogue (times two modes for pairs). */
const LOOKUP_CACHE_MAX_ENTRIES = 10_000;
/** A network found watched is trusted this long; one found unwatched is read again after WATCHED_MISS_MS (lib/watchers/watched.ts). */
const WATCHED_CACHE_MS = 5_000;
const WATCHED_MISS_MS = 1_000;

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;
type BoolString = "true" | "false";

interface ListParams {
	active?: BoolString;
	testnet?: BoolString;
	chainType?: ChainType;
}

interface ResolvePairParams {
	networkId: string;
	tokenId: string;
	mode: OrganizationMode;
	/** A payment (intent, link, quote, checkout): in live mode the network must be watched. */
	payment?: boolean;
}

/** A network as a chain watcher sees it (networks.watchable). */
export interface WatchableNetwork {
	id: string;
	slug: string;
	chainType: ChainType;
	chainId: number;
	isTestnet: boolean;
	requiredConfirmations: number;
	listenerConfig: Record<string, unknown>;
	tokens: Array<{ tokenId: string; symbol: string; contractAddress: string; decimals: number }>;
}

export interface ResolvedPair {
	network: NetworkView;
	token: TokenView;
}

interface NetworksVars {
	/** getNetwork / getToken / resolvePair answers by `action|ids`, frozen (callers on this node share them). */
	lookups: TtlCache<string, unknown>;
	/** Which networks a chain watcher follows now (lib/watchers/watched.ts), read from the watchers' leases. */
	watched: WatchedCache;
}

interface NetworksMethods {
	seed(opts?: { alwaysClear?: boolean }): Promise<SeedResult>;
	clearCache(): Promise<void>;
	cachedLookup<T>(key: string, load: () => Promise<T>): Promise<T>;
	loadPair(networkId: string, tokenId: string, mode: OrganizationMode): Promise<ResolvedPair>;
	findNetwork(id: string, opts?: { withDeleted?: boolean }): Promise<Network | null>;
	findToken(id: string, opts?: { withDeleted?: boolean }): Promise<Token | null>;
}

type NetworksThis = Service<{ rest: string }> & NetworksVars & NetworksMethods;

const BOOL_STRING = { type: "enum", values: ["true", "false"], optional: true } as const;
const LIST_PARAMS = { $$strict: "remove", active: BOOL_STRING, testnet: BOOL_STRING, chainType: { type: "enum", values: [...CHAIN_TYPES], optional: true } } as const;
/** Ids arrive from clients and other services; any string that is not a UUID is simply "not found". */
const ID = { type: "string" } as const;

/** Case-insensitive by name, then by id: the same order on every backend. */
function byName(a: NetworkView, b: NetworkView): number {
	const x = a.name.toLowerCase();
	const y = b.name.toLowerCase();
	if (x !== y) return x < y ? -1 : 1;
	return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** Cached answers are shared by every caller on the node: nobody may change one. */
function deepFreeze<T>(value: T): T {
	if (value && typeof value === "object" && !Object.isFrozen(value)) {
		Object.freeze(value);
		for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
	}
	return value;
}

const networkNotFound = () => notFound("Network not found");
const tokenNotFound = () => notFound("Token not found");

const NetworksService: ServiceSchema<{ rest: string }, NetworksMethods & Record<string, any>, NetworksVars> = {
	name: "networks",
	settings: { rest: "/" },

	actions: {
		/**
		 * The catalogue rows come from `rows` (cached 60 s like every catalogue read); `watched` is
		 * added per call from the watched cache (seconds), so it is never 60 s stale.
		 */
		list: {
			rest: "GET /payments/networks",
			auth: "public",
			params: LIST_PARAMS,
			async handler(this: NetworksThis, ctx: Ctx<ListParams>): Promise<ListedNetwork[]> {
				const [views, watched] = await Promise.all([ctx.call("networks.rows", ctx.params) as Promise<NetworkView[]>, this.watched.all()]);
				return views.map(n => ({ ...n, watched: watched.has(n.id) }));
			},
		},

		/** The list's networks without `watched` (cached: the cacher may share the objects, never change them). Internal: no route. */
		rows: {
			visibility: "public",
			cache: { keys: ["active", "testnet", "chainType"], ttl: CACHE_TTL_SECONDS },
			params: LIST_PARAMS,
			async handler(this: NetworksThis, ctx: Ctx<ListParams>): Promise<NetworkView[]> {
				const { models } = appOf(this.broker);
				const { active, testnet, chainType } = ctx.params;
				const where: Record<string, unknown> = {};
				// The spec defines only `active=true` as a filter; `false` lists everything, like omitting it.
				if (active === "true") where.isActive = true;
				if (testnet !== undefined) where.isTestnet = testnet === "true";
				if (chainType !== undefined) where.chainType = chainType;
				const rows = await models.Network.findAll({ where });
				// Sorted here, not in SQL: MySQL's and SQLite's collations order names differently.
				return rows.map(networkView).sort(byName);
			},
		},

		tokens: {
			rest: "GET /payments/networks/:id/tokens",
			auth: "public",
			cache: { keys: ["id", "active"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", id: ID, active: BOOL_STRING },
			async handler(this: NetworksThis, ctx: Ctx<{ id: string; active?: BoolString }>): Promise<TokenView[]> {
				const { models } = appOf(this.broker);
				const network = await this.findNetwork(ctx.params.id);
				if (!network) throw networkNotFound();
				const where: WhereOptions = { networkId: network.id };
				if (ctx.params.active === "true") Object.assign(where, { isActive: true });
				const rows = await models.Token.findAll({ where, order: [["isNative", "DESC"], ["symbol", "ASC"], ["id", "ASC"]] });
				return rows.map(tokenView);
			},
		},

		/** A network by id, also an inactive or removed one (old payments still refer to it). */
		getNetwork: {
			auth: "public",
			params: { $$strict: "remove", id: ID },
			async handler(this: NetworksThis, ctx: Ctx<{ id: string }>): Promise<NetworkView> {
				return this.cachedLookup(`network|${ctx.params.id}`, async () => {
					const network = await this.findNetwork(ctx.params.id, { withDeleted: true });
					if (!network) throw networkNotFound();
					return networkView(network);
				});
			},
		},

		/** A token by id with a summary of its network; also inactive or removed ones. */
		getToken: {
			auth: "public",
			params: { $$strict: "remove", id: ID },
			async handler(this: NetworksThis, ctx: Ctx<{ id: string }>): Promise<TokenWithNetworkView> {
				return this.cachedLookup(`token|${ctx.params.id}`, async () => {
					const token = await this.findToken(ctx.params.id, { withDeleted: true });
					if (!token) throw tokenNotFound();
					const network = await this.findNetwork(token.networkId, { withDeleted: true });
					if (!network) throw tokenNotFound();
					return { ...tokenView(token), network: networkSummary(network) };
				});
			},
		},

		/**
		 * What a new payment, link or withdrawal targets: an active network that fits the
		 * organization's mode and an active token of that network. 400 with `errors.networkId` /
		 * `errors.tokenId` naming what is wrong (codes in docs/networks.md). With `payment` (every
		 * intent, link, quote and checkout: lib/payments/checkout.ts), a live payment also needs
		 * a chain watcher following the network (`networkNotWatched`): no live payer is handed an
		 * address nobody watches. Sandbox payments may use any test network ("Simulate payment").
		 */
		resolvePair: {
			auth: "public",
			params: { $$strict: "remove", networkId: ID, tokenId: ID, mode: { type: "enum", values: [...ORGANIZATION_MODES] }, payment: { type: "boolean", optional: true } },
			async handler(this: NetworksThis, ctx: Ctx<ResolvePairParams>): Promise<ResolvedPair> {
				const { networkId, tokenId, mode, payment } = ctx.params;
				const pair = await this.cachedLookup(`pair|${networkId}|${tokenId}|${mode}`, () => this.loadPair(networkId, tokenId, mode));
				if (payment && mode === "live" && !(await this.watched.isWatched(pair.network.id))) throw badRequest(NOT_WATCHED_MESSAGE, { networkId: NETWORK_NOT_WATCHED });
				return pair;
			},
		},

		/**
		 * What a chain watcher or sweeper follows for a chain type: the catalogue's networks, switched
		 * on or off (with their catalogue slug, which names their RPC_URL_<SLUG> setting), and the
		 * tokens the chain carries (native, or with a contract), switched on or off. Switching one off
		 * stops new checkouts in it (resolvePair); the checkouts already open are still watched and
		 * their funds still swept (lib/watchers/catalogue.ts, docs/watchers.md "Catalogue changes").
		 * Only a start: running watchers and sweepers read tokens and confirmations again at every
		 * step. Internal: no route.
		 */
		watchable: {
			visibility: "public",
			params: { $$strict: "remove", chainType: { type: "enum", values: [...CHAIN_TYPES] } },
			async handler(this: NetworksThis, ctx: Ctx<{ chainType: ChainType }>): Promise<WatchableNetwork[]> {
				const { models } = appOf(this.broker);
				const networks = await models.Network.findAll({ where: { chainType: ctx.params.chainType } });
				const out: WatchableNetwork[] = [];
				for (const n of networks) {
					const tokens = await models.Token.findAll({ where: { networkId: n.id } });
					out.push({
						id: n.id,
						slug: n.slug,
						chainType: n.chainType,
						chainId: Number(n.chainId),
						isTestnet: n.isTestnet,
						requiredConfirmations: n.requiredConfirmations,
						listenerConfig: n.listenerConfig ?? {},
						tokens: watchedTokens(tokens),
					});
				}
				return out;
			},
		},

		/**
		 * Re-runs the seed and clears the caches on every node, changed or not (operators: `call
		 * networks.seed` in the REPL after switching a network or token off in the database).
		 */
		seed: {
			auth: "public",
			params: { $$strict: "remove" },
			async handler(this: NetworksThis): Promise<SeedResult> {
				return this.seed({ alwaysClear: true });
			},
		},
	},

	events: {
		[CATALOGUE_CHANGED_EVENT]: {
			async handler(this: NetworksThis) {
				await this.clearCache();
			},
		},
		/** A watcher took a network's lease somewhere in the cluster: read the watched networks again. */
		[WATCHER_LEADS_EVENT]: {
			handler(this: NetworksThis) {
				this.watched.invalidate();
			},
		},
	},

	methods: {
		async seed(this: NetworksThis, opts = {}) {
			const { models, config } = appOf(this.broker);
			const result = await seedCatalogue(models, { production: config.env === "production", testUsdcAddress: config.testUsdcAddress ?? null, requiredConfirmations: config.watchers.requiredConfirmations });
			if (result.changed) this.logger.info("Network catalogue seeded", result);
			if (result.changed || opts.alwaysClear) {
				await this.clearCache();
				this.broker.broadcast(CATALOGUE_CHANGED_EVENT, {});
			}
			return result;
		},

		async clearCache(this: NetworksThis) {
			this.lookups.clear();
			this.watched.invalidate();
			if (this.broker.cacher) await this.broker.cacher.clean(`${this.name}.**`);
		},

		/**
		 * The look-up's cached answer, else `load()`'s, kept unless the cache was cleared while it
		 * loaded (a change is never overwritten by an answer read before it). Errors are not kept.
		 */
		async cachedLookup<T>(this: NetworksThis, key: string, load: () => Promise<T>): Promise<T> {
			const hit = this.lookups.get(key);
			if (hit !== undefined) return hit as T;
			const generation = this.lookups.generation;
			const value = deepFreeze(await load());
			this.lookups.set(key, value, generation);
			return value;
		},

		/** resolvePair's answer from the database (the action caches it). */
		async loadPair(this: NetworksThis, networkId: string, tokenId: string, mode: OrganizationMode): Promise<ResolvedPair> {
			const [network, token] = await Promise.all([this.findNetwork(networkId), this.findToken(tokenId)]);
			const problems: Array<[field: string, code: string, message: string]> = [];
			if (!network) problems.push(["networkId", "networkNotFound", "Network not found"]);
			else if (!network.isActive) problems.push(["networkId", "networkInactive", "Network is not active"]);
			else if (!isNetworkAllowed(network, mode)) problems.push(["networkId", NETWORK_NOT_ALLOWED_FOR_MODE, MODE_MESSAGES[mode]]);
			if (!token) problems.push(["tokenId", "tokenNotFound", "Token not found"]);
			else if (token.networkId !== networkId) problems.push(["tokenId", "tokenNotOnNetwork", "Token does not belong to the network"]);
			// A contract token whose address is not known yet (the local chain's test token before
			// deployment): the seed keeps it inactive, and this says why.
			else if (!isTokenDeployed(token)) problems.push(["tokenId", "tokenNotDeployed", "Token is not available yet"]);
			else if (!token.isActive) problems.push(["tokenId", "tokenInactive", "Token is not active"]);
			if (problems.length > 0 || !network || !token) {
				throw badRequest(problems[0][2], Object.fromEntries(problems.map(([field, code]) => [field, code])));
			}
			return { network: networkView(network), token: tokenView(token) };
		},

		async findNetwork(this: NetworksThis, id, opts = {}) {
			if (!isUuid(id)) return null;
			return appOf(this.broker).models.Network.findByPk(id, { paranoid: !opts.withDeleted });
		},

		async findToken(this: NetworksThis, id, opts = {}) {
			if (!isUuid(id)) return null;
			return appOf(this.broker).models.Token.findByPk(id, { paranoid: !opts.withDeleted });
		},
	},

	created(this: NetworksThis) {
		this.lookups = new TtlCache(CACHE_TTL_SECONDS * 1000, LOOKUP_CACHE_MAX_ENTRIES);
		const { models } = appOf(this.broker);
		this.watched = new WatchedCache(nowMs => watchedNetworkIds(models, nowMs), { ttlMs: WATCHED_CACHE_MS, missMs: WATCHED_MISS_MS });
	},

	async started(this: NetworksThis) {
		await this.seed();
	},
};

export default NetworksService;
