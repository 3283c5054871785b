/**
 * Networks and tokens: the seeded catalogue (lib/networks/catalogue.ts) and its public reads,
 * GET /payments/networks and GET /payments/networks/:id/tokens. Other services resolve ids with
 * the internal actions `getNetwork`, `getToken` and `resolvePair` (which also enforces the mode
 * rule: sandbox organizations use test networks only, live organizations main networks only).
 * Reads are cached for 60 s; the cache is cleared on every node when the seed changes a row.
 * Decisions are in docs/networks.md.
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
import { seedCatalogue, SeedResult } from "../lib/networks/seed";
import { NetworkView, TokenView, TokenWithNetworkView, networkSummary, networkView, tokenView } from "../lib/networks/view";
import type { Network } from "../models/network.model";
import type { Token } from "../models/token.model";

registerTranslations("es", {
	"Network not found": "Red no encontrada",
	"Token not found": "Token no encontrado",
	"Network is not active": "La red no está activa",
	"Token is not active": "El token no está activo",
	"Token does not belong to the network": "El token no pertenece a la red",
	"Token is not available yet": "El token aún no está disponible",
	[MODE_MESSAGES.sandbox]: "Las organizaciones sandbox solo pueden usar redes de prueba",
	[MODE_MESSAGES.live]: "Las organizaciones live solo pueden usar redes principales",
});

/** Every node listens and clears its own cache (the memory cacher is per node). */
export const CATALOGUE_CHANGED_EVENT = "networks.catalogue.changed";
const CACHE_TTL_SECONDS = 60;

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
}

export interface ResolvedPair {
	network: NetworkView;
	token: TokenView;
}

interface NetworksMethods {
	seed(opts?: { alwaysClear?: boolean }): Promise<SeedResult>;
	clearCache(): Promise<void>;
	findNetwork(id: string, opts?: { withDeleted?: boolean }): Promise<Network | null>;
	findToken(id: string, opts?: { withDeleted?: boolean }): Promise<Token | null>;
}

type NetworksThis = Service<{ rest: string }> & NetworksMethods;

const BOOL_STRING = { type: "enum", values: ["true", "false"], optional: true } as const;
/** Ids arrive from clients and other services; any string that is not a UUID is simply "not found". */
const ID = { type: "string" } as const;

/** Case-insensitive by name, then by id: the same order on every backend. */
function byName(a: NetworkView, b: NetworkView): number {
	const x = a.name.toLowerCase();
	const y = b.name.toLowerCase();
	if (x !== y) return x < y ? -1 : 1;
	return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

const networkNotFound = () => notFound("Network not found");
const tokenNotFound = () => notFound("Token not found");

const NetworksService: ServiceSchema<{ rest: string }, NetworksMethods & Record<string, any>> = {
	name: "networks",
	settings: { rest: "/" },

	actions: {
		list: {
			rest: "GET /payments/networks",
			auth: "public",
			cache: { keys: ["active", "testnet", "chainType"], ttl: CACHE_TTL_SECONDS },
			params: {
				$$strict: "remove",
				active: BOOL_STRING,
				testnet: BOOL_STRING,
				chainType: { type: "enum", values: [...CHAIN_TYPES], optional: true },
			},
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
			cache: { keys: ["id"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", id: ID },
			async handler(this: NetworksThis, ctx: Ctx<{ id: string }>): Promise<NetworkView> {
				const network = await this.findNetwork(ctx.params.id, { withDeleted: true });
				if (!network) throw networkNotFound();
				return networkView(network);
			},
		},

		/** A token by id with a summary of its network; also inactive or removed ones. */
		getToken: {
			auth: "public",
			cache: { keys: ["id"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", id: ID },
			async handler(this: NetworksThis, ctx: Ctx<{ id: string }>): Promise<TokenWithNetworkView> {
				const token = await this.findToken(ctx.params.id, { withDeleted: true });
				if (!token) throw tokenNotFound();
				const network = await this.findNetwork(token.networkId, { withDeleted: true });
				if (!network) throw tokenNotFound();
				return { ...tokenView(token), network: networkSummary(network) };
			},
		},

		/**
		 * What a new payment, link or withdrawal targets: an active network that fits the
		 * organization's mode and an active token of that network. 400 with `errors.networkId` /
		 * `errors.tokenId` naming what is wrong (codes in docs/networks.md).
		 */
		resolvePair: {
			auth: "public",
			cache: { keys: ["networkId", "tokenId", "mode"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", networkId: ID, tokenId: ID, mode: { type: "enum", values: [...ORGANIZATION_MODES] } },
			async handler(this: NetworksThis, ctx: Ctx<ResolvePairParams>): Promise<ResolvedPair> {
				const { networkId, tokenId, mode } = ctx.params;
				const [network, token] = await Promise.all([this.findNetwork(networkId), this.findToken(tokenId)]);
				const problems: Array<[field: string, code: string, message: string]> = [];
				if (!network) problems.push(["networkId", "networkNotFound", "Network not found"]);
				else if (!network.isActive) problems.push(["networkId", "networkInactive", "Network is not active"]);
				else if (!isNetworkAllowed(network, mode)) problems.push(["networkId", NETWORK_NOT_ALLOWED_FOR_MODE, MODE_MESSAGES[mode]]);
				if (!token) problems.push(["tokenId", "tokenNotFound", "Token not found"]);
				else if (token.networkId !== networkId) problems.push(["tokenId", "tokenNotOnNetwork", "Token does not belong to the network"]);
				else if (!token.isActive) problems.push(["tokenId", "tokenInactive", "Token is not active"]);
				// A contract token whose address is not known yet (the local chain's test token before deployment).
				else if (!token.isNative && !token.contractAddress) problems.push(["tokenId", "tokenNotDeployed", "Token is not available yet"]);
				if (problems.length > 0 || !network || !token) {
					throw badRequest(problems[0][2], Object.fromEntries(problems.map(([field, code]) => [field, code])));
				}
				return { network: networkView(network), token: tokenView(token) };
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
	},

	methods: {
		async seed(this: NetworksThis, opts = {}) {
			const { models, config } = appOf(this.broker);
			const result = await seedCatalogue(models, { production: config.env === "production", testUsdcAddress: config.testUsdcAddress ?? null });
			if (result.changed) this.logger.info("Network catalogue seeded", result);
			if (result.changed || opts.alwaysClear) {
				await this.clearCache();
				this.broker.broadcast(CATALOGUE_CHANGED_EVENT, {});
			}
			return result;
		},

		async clearCache(this: NetworksThis) {
			if (this.broker.cacher) await this.broker.cacher.clean(`${this.name}.**`);
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

	async started(this: NetworksThis) {
		await this.seed();
	},
};

export default NetworksService;
