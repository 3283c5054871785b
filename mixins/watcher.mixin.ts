/**
 * The part of every chain watcher that is not chain-specific (docs/watchers.md): which networks
 * to follow (active networks of the chain type with an RPC URL configured), one NetworkWatcher
 * loop per network (lease, cursor, reorgs, reports: lib/watchers/runner.ts), the payments port
 * over the transactions service's actions, lag metrics, and the `status` action support staff
 * call from the REPL. `watcher-evm`, and later `watcher-bitcoin`, ... are thin services over it:
 * they give the chain type and how to build a chain source for a network.
 */
import type { Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { appOf } from "../lib/app";
import type { ChainSource } from "../lib/chains/source";
import { redactUrl, rpcUrlFor, WatchersConfig } from "../lib/watchers/config";
import { NetworkWatcher, PaymentsPort, WatchedNetwork, WatcherLogger, WatcherStatus, watcherOwnerId } from "../lib/watchers/runner";
import { networkReadiness, WatcherReadiness } from "../lib/watchers/readiness";
import type { WatchableNetwork } from "../services/networks.service";

export interface WatcherMixinOptions {
	chainType: string;
	createSource(network: WatchableNetwork, rpcUrl: string, config: WatchersConfig, logger: WatcherLogger): ChainSource;
}

interface WatcherVars {
	runners: Map<string, NetworkWatcher>;
	owner: string;
	refreshTimer: NodeJS.Timeout | null;
	refreshing: Promise<void> | null;
	/** Why the followed networks could not be read at the last refresh; null: they were. */
	networksError: string | null;
}

interface WatcherMethods {
	refreshNetworks(): Promise<void>;
	paymentsPort(): PaymentsPort;
	watcherReadiness(): WatcherReadiness;
}

type WatcherThis = Service & WatcherVars & WatcherMethods;

/** How often the followed networks are re-read (a network switched on or off, a token added). */
const NETWORKS_REFRESH_MS = 60_000;

export function WatcherMixin(opts: WatcherMixinOptions): ServiceSchema {
	const schema: Partial<ServiceSchema<ServiceSettingSchema, WatcherMethods & Record<string, any>, WatcherVars>> = {
		dependencies: ["networks", "transactions"],

		actions: {
			/** Each followed network: leader or standby, head, cursor, lag, RPC state (REPL: `call watcher-evm.status`). */
			status: {
				visibility: "public",
				params: { $$strict: "remove" },
				async handler(this: WatcherThis): Promise<WatcherStatus[]> {
					return [...this.runners.values()].map(r => ({ ...r.status }));
				},
			},
		},

		methods: {
			/** Per network this service follows: ready as a standby, or leading with the lease held and a small lag. */
			watcherReadiness(this: WatcherThis): WatcherReadiness {
				const maxLag = appOf(this.broker).config.watchers.readyMaxLag;
				const now = Date.now();
				const networks = [...this.runners.values()].map(r => networkReadiness(r.status, r.leaseHeldUntil, now, maxLag));
				return { chainType: opts.chainType, networks, error: this.networksError };
			},

			paymentsPort(this: WatcherThis): PaymentsPort {
				const call = <T>(action: string, params: object) => this.broker.call(action, params) as Promise<T>;
				return {
					depositAddresses: p => call("transactions.depositAddresses", p),
					openAddresses: p => call("transactions.openAddresses", p),
					detect: p => call("transactions.detect", p),
					credit: p => call("transactions.credit", p),
					revert: p => call("transactions.revertDetection", p),
				};
			},

			/** Starts a loop for each network to follow, stops those no longer followed. */
			async refreshNetworks(this: WatcherThis): Promise<void> {
				const app = appOf(this.broker);
				const config = app.config.watchers;
				const networks = (await this.broker.call("networks.watchable", { chainType: opts.chainType })) as WatchableNetwork[];
				const wanted = new Map<string, { network: WatchableNetwork; rpcUrl: string }>();
				for (const network of networks) {
					const rpcUrl = rpcUrlFor(config, network.slug);
					if (rpcUrl) wanted.set(network.id, { network, rpcUrl });
				}
				for (const [id, runner] of this.runners) {
					if (!wanted.has(id)) {
						this.runners.delete(id);
						await runner.stop();
					}
				}
				for (const [id, { network, rpcUrl }] of wanted) {
					if (this.runners.has(id)) continue;
					const watched: WatchedNetwork = {
						id: network.id,
						slug: network.slug,
						chainType: network.chainType,
						requiredConfirmations: network.requiredConfirmations,
						tokens: network.tokens.map(t => ({ tokenId: t.tokenId, symbol: t.symbol, contractAddress: t.contractAddress, decimals: t.decimals })),
					};
					const logger = this.logger as unknown as WatcherLogger;
					const metrics = this.broker.isMetricsEnabled() ? this.broker.metrics : null;
					const runner = new NetworkWatcher({
						sequelize: app.sequelize,
						models: app.models,
						source: opts.createSource(network, rpcUrl, config, logger),
						network: watched,
						payments: this.paymentsPort(),
						config,
						logger,
						now: () => app.clock.now(),
						owner: this.owner,
						onProgress: metrics
							? p => {
									metrics.set("watcher.head", p.head, { network: network.slug });
									metrics.set("watcher.cursor", p.cursor, { network: network.slug });
									metrics.set("watcher.lag", p.lag, { network: network.slug });
								}
							: undefined,
					});
					this.runners.set(id, runner);
					this.logger.info(`Watcher ${opts.chainType}: following ${network.slug} at ${redactUrl(rpcUrl)}`);
					runner.start();
				}
			},
		},

		created(this: WatcherThis) {
			this.runners = new Map();
			this.owner = watcherOwnerId(this.broker.nodeID);
			this.refreshTimer = null;
			this.refreshing = null;
			this.networksError = null;
			if (this.broker.isMetricsEnabled()) {
				for (const name of ["watcher.head", "watcher.cursor", "watcher.lag"]) {
					this.broker.metrics.register({ type: "gauge", name, labelNames: ["network"], description: `Chain watcher ${name.split(".")[1]} (blocks)` });
				}
			}
		},

		async started(this: WatcherThis) {
			const refresh = () => {
				this.refreshing = this.refreshNetworks().then(
					() => {
						this.networksError = null;
					},
					err => {
						this.networksError = `${opts.chainType} networks could not be read`;
						this.logger.warn(`Watcher ${opts.chainType}: networks could not be read: ${(err as Error).message}`);
					},
				);
				return this.refreshing;
			};
			await refresh();
			this.refreshTimer = setInterval(refresh, NETWORKS_REFRESH_MS);
		},

		async stopped(this: WatcherThis) {
			if (this.refreshTimer) clearInterval(this.refreshTimer);
			await this.refreshing;
			await Promise.all([...this.runners.values()].map(r => r.stop()));
			this.runners.clear();
		},
	};
	return schema as unknown as ServiceSchema;
}
