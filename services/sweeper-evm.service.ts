/**
 * The automatic EVM sweeper (docs/withdrawals.md "Sweeper"): moves settled payments from their
 * deposit addresses to the merchants' withdrawal addresses on every EVM network that has an RPC
 * URL (RPC_URL_<SLUG>). One node sweeps a network at a time (a lease, like the watchers'); the
 * safety of each send is in lib/sweeps (nonces under a row lock, bytes recorded before broadcast).
 * Runs in the watcher node group: it holds the RPC endpoints and derives deposit keys from the seed.
 */
import { JsonRpcProvider, Network } from "ethers";
import type { Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { v5 as uuidv5 } from "uuid";
import { appOf } from "../lib/app";
import { chainParamsFor, codecFor } from "../lib/chains";
import { CATALOGUE_NAMESPACE } from "../lib/networks/catalogue";
import { hdSeed } from "../lib/payments/store";
import { eip7702For, sweepContractsFor } from "../lib/sweeps/config";
import { SweepRunner, SweeperPorts } from "../lib/sweeps/runner";
import { createHttpBridgeProvider } from "../lib/withdrawals/bridge-provider";
import { redactUrl, rpcUrlFor } from "../lib/watchers/config";
import { acquireLease, ensureCursor, Lease, renewLease } from "../lib/watchers/store";
import type { WatchableNetwork } from "./networks.service";

interface SweeperMethods {
	tick(): Promise<void>;
	refreshNetworks(): Promise<void>;
}

interface SweeperVars {
	runners: Map<string, { runner: SweepRunner; leaseId: string; lease: Lease | null; provider: JsonRpcProvider; slug: string }>;
	timer: NodeJS.Timeout | null;
	running: Promise<void> | null;
	owner: string;
}

type SweeperThis = Service & SweeperVars & SweeperMethods;

const SweeperEvmService: ServiceSchema<ServiceSettingSchema, SweeperMethods & Record<string, any>, SweeperVars> = {
	name: "sweeper-evm",
	dependencies: ["networks", "transactions", "withdrawals"],

	actions: {
		/** Sweeps in flight and the last ones per network (REPL: `call sweeper-evm.status`). */
		status: {
			visibility: "public",
			params: { $$strict: "remove" },
			async handler(this: SweeperThis) {
				const { models } = appOf(this.broker);
				const out = [];
				for (const [networkId, r] of this.runners) {
					const recent = await models.Sweep.findAll({ where: { networkId }, order: [["createdAt", "DESC"]], limit: 10 });
					out.push({ networkId, slug: r.slug, leader: Boolean(r.lease), sweeps: recent.map(s => ({ id: s.id, kind: s.kind, status: s.status, txHash: s.txHash, nonce: s.nonce, reason: s.reason })) });
				}
				return out;
			},
		},
	},

	methods: {
		async refreshNetworks(this: SweeperThis) {
			const app = appOf(this.broker);
			const { config, models } = app;
			const networks = (await this.broker.call("networks.watchable", { chainType: "evm" })) as WatchableNetwork[];
			const ports: SweeperPorts = {
				sweepable: p => this.broker.call("transactions.sweepable", p),
				destination: async p => ((await this.broker.call("withdrawals.destination", p)) as { address: string } | null)?.address ?? null,
				record: p => this.broker.call("withdrawals.record", p),
				route: p => this.broker.call("withdrawals.route", p),
				pendingRequests: () => this.broker.call("withdrawals.pendingRequests", { limit: 100 }),
				completeRequest: p => this.broker.call("withdrawals.completeRequest", p),
				failRequest: p => this.broker.call("withdrawals.failRequest", p),
			};
			for (const network of networks) {
				const rpcUrl = rpcUrlFor(config.watchers, network.slug);
				if (!rpcUrl || this.runners.has(network.id)) continue;
				const provider = new JsonRpcProvider(rpcUrl, Network.from(network.chainId), { staticNetwork: true, cacheTimeout: -1 });
				const params = chainParamsFor({ chainType: "evm", isTestnet: network.isTestnet } as never);
				const runner = new SweepRunner({
					sequelize: app.sequelize,
					models,
					provider,
					network: { id: network.id, slug: network.slug, chainId: network.chainId, requiredConfirmations: network.requiredConfirmations, eip7702: eip7702For(config.sweeper, network.slug), tokens: network.tokens },
					contracts: sweepContractsFor(config.sweeper, network.slug),
					sweeperKey: config.sweeper.privateKey,
					bridge: config.withdrawals.bridge.url ? createHttpBridgeProvider({ baseUrl: config.withdrawals.bridge.url, apiKey: config.withdrawals.bridge.apiKey ?? undefined, timeoutMs: config.withdrawals.bridge.timeoutMs }) : null,
					depositKey: index => codecFor("evm").derivePrivateKey(hdSeed(app).seed, params, index),
					ports,
					settings: { batchSize: config.sweeper.batchSize, stuckMs: config.sweeper.stuckMs, minValueMultiple: config.sweeper.minValueMultiple, maxAgeMs: config.sweeper.maxAgeMs },
					now: () => app.clock.now(),
					logger: this.logger,
				});
				const leaseId = uuidv5(`sweep:${network.id}`, CATALOGUE_NAMESPACE);
				await ensureCursor(models, leaseId, "sweep", app.clock.now());
				this.runners.set(network.id, { runner, leaseId, lease: null, provider, slug: network.slug });
				this.logger.info(`Sweeper: sweeping ${network.slug} through ${redactUrl(rpcUrl)}`);
			}
		},

		/** One round: lease per network (taken or renewed), then a sweeper step where it is held. */
		async tick(this: SweeperThis) {
			const { models, config } = appOf(this.broker);
			await this.refreshNetworks();
			for (const r of this.runners.values()) {
				try {
					if (r.lease && !(await renewLease(models, r.lease, config.sweeper.leaseMs, Date.now()))) r.lease = null;
					if (!r.lease) r.lease = await acquireLease(models, r.leaseId, this.owner, config.sweeper.leaseMs, Date.now());
					if (r.lease) await r.runner.step();
				} catch (err) {
					this.logger.warn(`Sweeper step failed on ${r.slug}: ${(err as Error).message}`);
				}
			}
		},
	},

	created(this: SweeperThis) {
		const { config } = appOf(this.broker);
		if (config.env === "production" && !config.sweeper.privateKey) {
			throw new Error("Configuration: SWEEPER_PRIVATE_KEY is required in production on nodes running sweeper-evm");
		}
		this.runners = new Map();
		this.timer = null;
		this.running = null;
		this.owner = `${this.broker.nodeID}:${process.pid}:sweeper`;
	},

	async started(this: SweeperThis) {
		const { config } = appOf(this.broker);
		const loop = () => {
			if (this.running) return;
			this.running = this.tick()
				.catch(err => this.logger.warn(`Sweeper: ${(err as Error).message}`))
				.finally(() => {
					this.running = null;
				});
		};
		this.timer = setInterval(loop, config.sweeper.pollMs);
		loop();
	},

	async stopped(this: SweeperThis) {
		if (this.timer) clearInterval(this.timer);
		await this.running;
		for (const r of this.runners.values()) r.provider.destroy();
	},
};

export default SweeperEvmService;
