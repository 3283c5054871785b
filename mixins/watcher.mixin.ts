/**
 * The part of every chain watcher that is not chain-specific (docs/watchers.md): which networks
 * to follow (the catalogue's networks of the chain type, on or off, with an RPC URL configured;
 * tokens and confirmations are read by each step: docs/watchers.md "Catalogue changes"), one NetworkWatcher
 * loop per network (lease, cursor, reorgs, reports: lib/watchers/runner.ts), the payments port
 * over the transactions service's actions, lag metrics, the `status` action and the support
 * staff's `support.*` actions (the REPL's `watchers` commands). `watcher-evm`, and later `watcher-bitcoin`, ... are thin services over it:
 * they give the chain type and how to build a chain source for a network.
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { appOf } from "../lib/app";
import { captureLoopError } from "../lib/error-tracking";
import { badRequest, notFound } from "../lib/errors";
import { BLOCK_NUMBER, SUPPORT_HASH } from "../lib/support/params";
import { rewindForReplay, SupportCursor, SupportRewind, SupportTransfer, transfersByHash } from "../lib/watchers/store";
import type { ChainSource } from "../lib/chains/source";
import { dropSeries, METRIC, setGauge } from "../lib/metrics";
import { redactUrl, rpcUrlFor, WatchersConfig } from "../lib/watchers/config";
import { NetworkWatcher, PaymentsPort, WatchedNetwork, WatcherLogger, WatcherStatus, watcherOwnerId } from "../lib/watchers/runner";
import { networkReadiness, WatcherReadiness } from "../lib/watchers/readiness";
import { WATCHER_LEADS_EVENT } from "../lib/watchers/watched";
import { LEASE_RELEASED_EVENT, LeaseBalancer, type ShareView } from "../lib/watchers/balancer";
import { CATALOGUE_CHANGED_EVENT, type WatchableNetwork } from "../services/networks.service";

export interface WatcherMixinOptions {
	chainType: string;
	createSource(network: WatchableNetwork, rpcUrl: string, config: WatchersConfig, logger: WatcherLogger): ChainSource;
}

interface WatcherVars {
	runners: Map<string, NetworkWatcher>;
	owner: string;
	refreshTimer: NodeJS.Timeout | null;
	refreshing: Promise<void> | null;
	/** Set at stop: no refresh starts a runner after it. */
	stopping: boolean;
	/** Why the followed networks could not be read at the last refresh; null: they were. */
	networksError: string | null;
	/** The fair share of this service's networks among its live replicas (lib/watchers/balancer.ts). */
	balancer: LeaseBalancer;
}

interface WatcherMethods {
	refreshNetworks(): Promise<void>;
	refresh(): Promise<void>;
	slugs(): Promise<Map<string, string>>;
	paymentsPort(): PaymentsPort;
	watcherReadiness(): WatcherReadiness;
	shareView(): ShareView;
}

type WatcherThis = Service & WatcherVars & WatcherMethods;


/**
 * How often the followed networks are re-read (a network added to or removed from the catalogue,
 * an RPC cookie); at once on CATALOGUE_CHANGED_EVENT. Tokens and confirmations are not this
 * refresh's business: every step of a runner reads them (lib/watchers/catalogue.ts).
 */
export const NETWORKS_REFRESH_MS = 15_000;

export function WatcherMixin(opts: WatcherMixinOptions): ServiceSchema {
	const schema: Partial<ServiceSchema<ServiceSettingSchema, WatcherMethods & Record<string, any>, WatcherVars>> = {
		dependencies: ["networks", "transactions"],

		actions: {
			/** This replica's fair share: live replicas of the service, ceil(networks / replicas), networks led (REPL `watchers`). */
			share: {
				visibility: "public",
				params: { $$strict: "remove" },
				handler(this: WatcherThis): ShareView {
					return this.shareView();
				},
			},

			/** Each followed network: leader or standby, head, cursor, lag, RPC state (REPL: `call watcher-evm.status`). */
			status: {
				visibility: "public",
				params: { $$strict: "remove" },
				async handler(this: WatcherThis): Promise<WatcherStatus[]> {
					return [...this.runners.values()].map(r => ({ ...r.status }));
				},
			},

			// Support staff's actions (REPL `watchers`, `tx`, `watchers rewind`; docs/operations.md).
			// Internal: no route (`auth: "admin"` should one ever be added).

			/** The stored cursor and lease of every network of this chain type (also when its leader is gone). */
			"support.cursors": {
				visibility: "public",
				auth: "admin",
				params: { $$strict: "remove" },
				async handler(this: WatcherThis): Promise<SupportCursor[]> {
					const { models } = appOf(this.broker);
					const [rows, slugs] = await Promise.all([models.ChainCursor.findAll({ where: { chainType: opts.chainType } }), this.slugs()]);
					return rows.map(r => ({
						networkId: r.networkId,
						slug: slugs.get(r.networkId) ?? null,
						chainType: r.chainType,
						blockNumber: r.blockNumber,
						leaseOwner: r.leaseOwner,
						leaseUntil: r.leaseUntil ? r.leaseUntil.toISOString() : null,
						updatedAt: r.updatedAt ? new Date(r.updatedAt).toISOString() : null,
					}));
				},
			},

			/** What this chain type's watchers stored of one chain transaction (status, what payments acknowledged). */
			"support.transfers": {
				visibility: "public",
				auth: "admin",
				params: { $$strict: "remove", txHash: SUPPORT_HASH },
				async handler(this: WatcherThis, ctx: Context<{ txHash: string }>): Promise<SupportTransfer[]> {
					const { models } = appOf(this.broker);
					const cursors = await models.ChainCursor.findAll({ where: { chainType: opts.chainType }, attributes: ["networkId"] });
					const [rows, slugs] = await Promise.all([transfersByHash(models, cursors.map(c => c.networkId), ctx.params.txHash), this.slugs()]);
					return rows.map(r => ({
						networkId: r.networkId,
						slug: slugs.get(r.networkId) ?? null,
						txHash: r.txHash,
						logIndex: Number(r.logIndex),
						blockNumber: Number(r.blockNumber),
						toAddress: r.toAddress,
						tokenId: r.tokenId,
						amount: r.amount,
						status: r.status,
						reported: r.reported,
						pending: !!r.pending,
					}));
				},
			},

			/**
			 * Replays a range: the network's cursor goes back to `block` (lib/watchers/store.ts
			 * `rewindForReplay`) and the blocks after it are read again. Refused for a network this
			 * node does not follow, a block the chain does not have, or one not before the cursor.
			 */
			"support.rewind": {
				visibility: "public",
				auth: "admin",
				params: { $$strict: "remove", network: { type: "string", min: 1, max: 100 }, block: BLOCK_NUMBER },
				async handler(this: WatcherThis, ctx: Context<{ network: string; block: number }>) {
					const app = appOf(this.broker);
					const { network, block } = ctx.params;
					const runner = [...this.runners.values()].find(r => r.status.slug === network || r.status.networkId === network);
					if (!runner) throw notFound(`Network ${network} is not followed by ${this.name} on node ${this.broker.nodeID}`);
					const ref = await runner.readBlock(block);
					if (!ref) throw badRequest(`Block ${block} is not on the ${runner.status.slug} chain of the node this watcher reads (head below it?)`);
					const done = await rewindForReplay(app.sequelize, app.models, runner.status.networkId, { number: ref.number, hash: ref.hash }, app.clock.now());
					if (!done.ok) throw badRequest(`Cannot rewind ${runner.status.slug}: ${done.reason}`);
					this.logger.warn(`Watcher ${opts.chainType}: ${runner.status.slug} rewound from block ${done.from} to ${done.to} by support; blocks ${done.to + 1}..${done.from} are read again`);
					const out: SupportRewind = { networkId: runner.status.networkId, slug: runner.status.slug, from: done.from, to: done.to, hash: ref.hash };
					return out;
				},
			},
		},

		events: {
			/** A replica of this service gave a network up: its standbys here read the lease again now. */
			[LEASE_RELEASED_EVENT]: {
				handler(this: WatcherThis, ctx: Context<{ service?: string; leaseId?: string; stopping?: boolean }>) {
					if (ctx.params.service !== this.name || !ctx.params.leaseId || ctx.nodeID === this.broker.nodeID) return;
					this.balancer.heardRelease(ctx.params.leaseId, ctx.params.stopping === true);
					this.runners.get(ctx.params.leaseId)?.nudge();
				},
			},
			/** The seed (or `call networks.seed`) changed the catalogue: the followed networks are read again now. */
			[CATALOGUE_CHANGED_EVENT]: {
				handler(this: WatcherThis) {
					void this.refresh();
				},
			},
		},

		methods: {
			/** One refresh of the followed networks at a time; a refresh asked meanwhile runs after it. */
			refresh(this: WatcherThis): Promise<void> {
				const run = () =>
					(this.stopping ? Promise.resolve() : this.refreshNetworks()).then(
						() => {
							this.networksError = null;
						},
						err => {
							this.networksError = `${opts.chainType} networks could not be read`;
							this.logger.warn(`Watcher ${opts.chainType}: networks could not be read: ${(err as Error).message}`);
							captureLoopError(err, { service: this.name });
						},
					);
				const next: Promise<void> = (this.refreshing ?? Promise.resolve()).then(run).finally(() => {
					if (this.refreshing === next) this.refreshing = null;
				});
				this.refreshing = next;
				return next;
			},

			/** Slugs of this chain type's networks by id (support views). */
			async slugs(this: WatcherThis): Promise<Map<string, string>> {
				const networks = (await this.broker.call("networks.watchable", { chainType: opts.chainType })) as WatchableNetwork[];
				const out = new Map(networks.map(n => [n.id, n.slug]));
				for (const r of this.runners.values()) out.set(r.status.networkId, r.status.slug);
				return out;
			},

			/** Per network this service follows: ready as a standby, or leading with the lease held and a small lag. */
			watcherReadiness(this: WatcherThis): WatcherReadiness {
				const maxLag = appOf(this.broker).config.watchers.readyMaxLag;
				const now = Date.now();
				const networks = [...this.runners.values()].map(r => networkReadiness(r.status, r.leaseHeldUntil, now, maxLag));
				return { chainType: opts.chainType, networks, error: this.networksError, share: this.shareView() };
			},

			/** This replica's view of the fair share: live replicas of the service, share, networks led. */
			shareView(this: WatcherThis): ShareView {
				return { service: this.name, nodeID: this.broker.nodeID, ...this.balancer.view() };
			},

			paymentsPort(this: WatcherThis): PaymentsPort {
				const call = <T>(action: string, params: object) => this.broker.call(action, params) as Promise<T>;
				return {
					depositAddresses: p => call("transactions.depositAddresses", p),
					openAddresses: p => call("transactions.openAddresses", p),
					detectBatch: p => call("transactions.detectBatch", p),
					creditBatch: p => call("transactions.creditBatch", p),
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
					const labels = { network: network.slug };
					const gauges = [METRIC.watcherHead, METRIC.watcherCursor, METRIC.watcherLag] as const;
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
						onFailure: err => captureLoopError(err, { service: this.name, network: network.slug }),
						onProgress: p => {
							setGauge(this.broker, METRIC.watcherHead, p.head, labels);
							setGauge(this.broker, METRIC.watcherCursor, p.cursor, labels);
							setGauge(this.broker, METRIC.watcherLag, p.lag, labels);
						},
						onLead: () => {
							// Only a hint (the lease row is the truth): a transporter hiccup costs a cache lifetime, nothing more.
							Promise.resolve(this.broker.broadcast(WATCHER_LEADS_EVENT, { networkId: network.id, chainType: network.chainType })).catch(() => undefined);
						},
						onStandby: () => {
							for (const name of gauges) dropSeries(this.broker, name, labels);
						},
						takeDelayMs: () => this.balancer.takeDelayMs(network.id),
						onRelease: stopping => {
							Promise.resolve(this.broker.broadcast(LEASE_RELEASED_EVENT, { service: this.name, leaseId: network.id, stopping })).catch(() => undefined);
						},
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
			this.stopping = false;
			this.networksError = null;
			const config = appOf(this.broker).config.watchers;
			this.balancer = new LeaseBalancer({
				broker: this.broker,
				serviceName: this.name,
				models: appOf(this.broker).models,
				rebalanceMs: config.rebalanceMs,
				deferMs: config.takeDeferMs,
				handOverMs: config.handOverMs,
				logger: this.logger,
				leases: () =>
					[...this.runners.values()].map(r => ({
						leaseId: r.status.networkId,
						slug: r.status.slug,
						leading: () => r.status.leader,
						lag: () => r.status.lag,
						releasable: () => r.handOverReady,
						release: () => r.handOver(),
					})),
			});
		},

		async started(this: WatcherThis) {
			await this.refresh();
			this.refreshTimer = setInterval(() => void this.refresh(), NETWORKS_REFRESH_MS);
			this.balancer.start();
		},

		async stopped(this: WatcherThis) {
			if (this.refreshTimer) clearInterval(this.refreshTimer);
			await this.balancer.stop();
			this.stopping = true;
			while (this.refreshing) await this.refreshing;
			await Promise.all([...this.runners.values()].map(r => r.stop()));
			this.runners.clear();
		},
	};
	return schema as unknown as ServiceSchema;
}
