/**
 * What every chain's sweeper service shares (docs/withdrawals.md "The sweeper service"): the
 * networks it sweeps (the catalogue's networks of its chain type, on or off, with an RPC URL, RPC_URL_<SLUG>;
 * their tokens and confirmations read again before every step), one lease
 * per network so one node sweeps it at a time (lib/watchers/store.ts leases, on a row of their own),
 * the step loop, and the `status` action for the REPL. `sweeper-evm`, `sweeper-bitcoin` and `sweeper-solana` only
 * say how to build a runner for a network.
 */
import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { v5 as uuidv5 } from "uuid";
import { App, appOf } from "../lib/app";
import { captureLoopError } from "../lib/error-tracking";
import { badRequest, notFound } from "../lib/errors";
import { finishSweep } from "../lib/sweeps/store";
import { countMetric, METRIC, startCounters, SWEEP_HOLD_SCOPES, SWEEP_OUTCOMES, SweepOutcome } from "../lib/metrics";
import { clearHoldsAt, type SameAddress } from "../lib/sweeps/holds";
import type { SweepHoldScope } from "../models/sweep.model";
import { CATALOGUE_NAMESPACE } from "../lib/networks/catalogue";
import { redactUrl, rpcUrlFor } from "../lib/watchers/config";
import { readNetworkCatalogue } from "../lib/watchers/catalogue";
import { acquireLease, ensureCursor, Lease, LeaseLostError, releaseLease, renewLease } from "../lib/watchers/store";
import type { SweepNetwork } from "../lib/sweeps/ports";
import type { SweeperReadiness } from "../lib/watchers/readiness";
import { LEASE_RELEASED_EVENT, LeaseBalancer, type ShareView } from "../lib/watchers/balancer";
import type { WatchableNetwork } from "../services/networks.service";

/**
 * A runner's view of its network that follows the catalogue: the mixin reads the network's tokens
 * and required confirmations again before every step (lib/watchers/catalogue.ts) into `network`,
 * and the runner, reading `tokens` / `requiredConfirmations` through this view, sees them.
 */
export function liveSweepNetwork(network: WatchableNetwork, eip7702: boolean): SweepNetwork {
	return {
		id: network.id,
		slug: network.slug,
		chainId: network.chainId,
		eip7702,
		get requiredConfirmations() {
			return network.requiredConfirmations;
		},
		get tokens() {
			return network.tokens;
		},
	};
}

export interface SweepStepper {
	/** One step under the network's sweep lease: every write is fenced by it; `lost` aborts when it is gone. */
	step(fence: Lease, lost: AbortSignal): Promise<void>;
	close?(): void;
}

/** What a sweep runner reports to its service: failures (error tracking), outcomes and holds made for good (metrics). */
export interface SweepRunnerHooks {
	onFailure: (err: unknown) => void;
	onOutcome: (outcome: SweepOutcome) => void;
	onBlocked: (scope: SweepHoldScope) => void;
}

export interface SweeperMixinOptions {
	chainType: string;
	/**
	 * The sweeper wallet's key setting, which production never runs without (it pays token sweeps'
	 * fees): its variable name and whether the configuration holds it.
	 */
	productionKey?: { variable: string; present(app: App): boolean };
	/**
	 * A runner for one network, or null when the network cannot be swept (a warning says why).
	 * `hooks.onFailure` reports a failed sweep the runner logs and goes past (error tracking);
	 * `hooks.onOutcome` counts its sweeps' steps (metrics).
	 */
	createRunner(service: Service, app: App, network: WatchableNetwork, rpcUrl: string, hooks: SweepRunnerHooks): SweepStepper | null;
	/** Whether two spellings are one address, for support.clearHold (default: equal ignoring case). */
	sameAddress?: SameAddress;
}

interface RunnerEntry {
	runner: SweepStepper;
	/** The network the runner was built with (liveSweepNetwork): tokens and confirmations updated before each step. */
	network: WatchableNetwork;
	leaseId: string;
	lease: Lease | null;
	slug: string;
	/** A hand-over asked by the fair share (lib/watchers/balancer.ts): done before the network's next step. */
	handOver: Array<(released: boolean) => void>;
	/** When the lease was last taken or renewed (wall clock ms). */
	renewedAt: number;
	/** A hand-over under way (its lease being released): the round leaves the network alone meanwhile. */
	releasing: Promise<void> | null;
	/** Its lease being taken outside the round (takeNow): the network's turn waits for it. */
	taking: Promise<void> | null;
}

interface SweeperMethods {
	sweeperReadiness(): SweeperReadiness;
	shareView(): ShareView;
	tick(): Promise<void>;
	kick(): void;
	handOverNow(r: RunnerEntry): Promise<void>;
	refreshNetworks(): Promise<void>;
	stepWithHeartbeat(r: RunnerEntry, lease: Lease): Promise<void>;
	renewWaiting(stepping: RunnerEntry): Promise<void>;
	takeNow(r: RunnerEntry, retry?: boolean): void;
}

interface SweeperVars {
	runners: Map<string, RunnerEntry>;
	timer: NodeJS.Timeout | null;
	running: Promise<void> | null;
	owner: string;
	balancer: LeaseBalancer;
	/** Another round wanted right after the one running (a lease released by another replica, a hand-over asked). */
	again: boolean;
	/** The network whose turn in the round it is (lease, catalogue, step); null between turns. */
	stepping: RunnerEntry | null;
	/** Set at stop: no round and no take outside the round starts after it. */
	closing: boolean;
	/** Takes outside the round waiting for the take delay (takeNow). */
	takeTimers: Set<NodeJS.Timeout>;
}

type SweeperThis = Service & SweeperVars & SweeperMethods;

export function SweeperMixin(opts: SweeperMixinOptions): ServiceSchema {
	const schema: Partial<ServiceSchema<ServiceSettingSchema, SweeperMethods & Record<string, any>, SweeperVars>> = {
		dependencies: ["networks", "transactions", "withdrawals"],

		actions: {
			/** This replica's fair share: live replicas of the service, ceil(networks / replicas), networks led (REPL `watchers`). */
			share: {
				visibility: "public",
				params: { $$strict: "remove" },
				handler(this: SweeperThis): ShareView {
					return this.shareView();
				},
			},

			/**
			 * Each swept network: lease held or not, its last sweeps, and its holds: destinations and
			 * deposits the sweeper backs off from or stopped sending to after failures (REPL:
			 * `call sweeper-<chain>.status`).
			 */
			status: {
				visibility: "public",
				params: { $$strict: "remove" },
				async handler(this: SweeperThis) {
					const { models } = appOf(this.broker);
					const out = [];
					for (const [networkId, r] of this.runners) {
						const recent = await models.Sweep.findAll({ where: { networkId }, order: [["createdAt", "DESC"]], limit: 10 });
						const holds = await models.SweepHold.findAll({ where: { networkId }, order: [["updatedAt", "DESC"]], limit: 100 });
						// Stalled sweeps are operator alerts (docs/operations.md "A stalled sweep"): all of them, whatever their age.
						const stalled = await models.Sweep.findAll({ where: { networkId, status: "stalled" }, order: [["createdAt", "ASC"]] });
						const view = (s: (typeof recent)[number]) => ({ id: s.id, kind: s.kind, status: s.status, txHash: s.txHash, nonce: s.nonce, reason: s.reason, bridgeState: s.bridgeState });
						out.push({
							networkId,
							slug: r.slug,
							leader: Boolean(r.lease),
							sweeps: recent.map(view),
							holds: holds.map(h => ({ scope: h.scope, address: h.address, tokenId: h.tokenId || null, failures: h.failures, reason: h.reason, blocked: Boolean(h.blockedAt), blockedAt: h.blockedAt, nextAttemptAt: h.blockedAt ? null : h.nextAttemptAt })),
							alerts: stalled.map(s => ({ ...view(s), fromAddress: s.fromAddress, hashes: s.hashes, requestId: s.requestId, unseenSince: s.unseenSince?.toISOString() ?? null })),
						});
					}
					return out;
				},
			},

			/**
			 * Support: lifts every hold on an address of a network (a destination the merchant has fixed,
			 * a deposit whose token was unpaused), so the sweeper tries it again at its next step
			 * (REPL: `call sweeper-evm.support.clearHold --network base --address 0x…`).
			 */
			"support.clearHold": {
				visibility: "public",
				auth: "admin",
				params: { $$strict: "remove", network: { type: "string", min: 1, max: 100 }, address: { type: "string", min: 1, max: 128, trim: true } },
				async handler(this: SweeperThis, ctx: { params: { network: string; address: string } }) {
					const { models } = appOf(this.broker);
					const networks = (await this.broker.call("networks.watchable", { chainType: opts.chainType })) as WatchableNetwork[];
					const network = networks.find(n => n.id === ctx.params.network || n.slug === ctx.params.network);
					if (!network) throw notFound("Network not found");
					const cleared = await clearHoldsAt(models, network.id, ctx.params.address, opts.sameAddress);
					if (cleared > 0) this.logger.warn(`Sweeper: ${cleared} hold(s) on ${ctx.params.address} (${network.slug}) cleared by support`);
					return { network: network.slug, address: ctx.params.address, cleared };
				},
			},

			/**
			 * An operator's answer to a stalled sweep (docs/operations.md "A stalled sweep"), once they
			 * have checked on chain that the deposit(s) still hold the funds: `release` ends it `failed`,
			 * so its funds (and its withdrawal request) are planned again. Only a stalled sweep can be
			 * released; whatever else happened on chain is booked by hand, as that section says.
			 */
			"support.resolveStalled": {
				visibility: "public",
				auth: "admin",
				params: { $$strict: "remove", sweepId: { type: "uuid" }, resolution: { type: "enum", values: ["release"] }, note: { type: "string", max: 500, optional: true } },
				async handler(this: SweeperThis, ctx: Context<{ sweepId: string; resolution: "release"; note?: string }>) {
					const { models, sequelize, clock } = appOf(this.broker);
					const sweep = await models.Sweep.findByPk(ctx.params.sweepId);
					if (!sweep || !this.runners.has(sweep.networkId)) throw notFound("Sweep not found");
					if (sweep.status !== "stalled") throw badRequest(`The sweep is ${sweep.status}, not stalled`, { sweepId: "notStalled" });
					const reason = `released by an operator${ctx.params.note ? `: ${ctx.params.note}` : ""} (was: ${sweep.reason ?? "stalled"})`;
					if (!(await finishSweep(sequelize, models, null, sweep, "failed", { reason }, clock.now()))) throw badRequest("The sweep has changed meanwhile", { sweepId: "changed" });
					if (sweep.requestId) await ctx.call("withdrawals.failRequest", { id: sweep.requestId, reason: `sweep ${sweep.id} ${reason}; retried` });
					this.logger.warn(`Sweeper: stalled sweep ${sweep.id} ${reason}; its funds are planned again`);
					const row = (await models.Sweep.findByPk(sweep.id))!;
					return { id: row.id, status: row.status, reason: row.reason };
				},
			},
		},

		events: {
			/** A replica of this service gave a network up: this node reads its lease now, even while a round steps other networks. */
			[LEASE_RELEASED_EVENT]: {
				handler(this: SweeperThis, ctx: Context<{ service?: string; leaseId?: string; stopping?: boolean }>) {
					if (ctx.params.service !== this.name || ctx.nodeID === this.broker.nodeID) return;
					if (ctx.params.leaseId) this.balancer.heardRelease(ctx.params.leaseId, ctx.params.stopping === true);
					const r = [...this.runners.values()].find(x => x.leaseId === ctx.params.leaseId);
					if (r) this.takeNow(r);
					// And a round after the one running (its step; a lease the take above left alone).
					this.kick();
				},
			},
		},

		methods: {
			/**
			 * Renews the leases of the networks waiting for their turn in the round (those not renewed for
			 * a third of SWEEP_LEASE_MS); one found lost is taken again (or not) at its turn.
			 */
			async renewWaiting(this: SweeperThis, stepping: RunnerEntry) {
				const { models, config } = appOf(this.broker);
				for (const other of this.runners.values()) {
					const lease = other.lease;
					if (other === stepping || !lease || Date.now() - other.renewedAt < config.sweeper.leaseMs / 3) continue;
					const at = Date.now();
					// An error says nothing about the lease: its turn in the round renews it or finds it lost.
					const held = await renewLease(models, lease, config.sweeper.leaseMs, at).catch(() => null);
					if (held === false && other.lease === lease) other.lease = null;
					if (held) other.renewedAt = at;
				}
			},

			/**
			 * Takes a network's lease now, outside the round (another replica released it: a graceful
			 * stop or a hand-over), so the network is led within a lease read, not once a round busy with
			 * other networks reaches it. Only the lease: its step comes at its turn in the round (one step
			 * at a time, never beside another of its own), which is asked for at once. A lease free for
			 * less than the take delay (this replica at its fair share) is tried once more after it.
			 */
			takeNow(this: SweeperThis, r: RunnerEntry, retry = true) {
				if (this.closing || r.lease || r.releasing || r.taking || this.stepping === r) return;
				const { models, config } = appOf(this.broker);
				const at = Date.now();
				const delay = this.balancer.takeDelayMs(r.leaseId);
				r.taking = acquireLease(models, r.leaseId, this.owner, config.sweeper.leaseMs, at, delay)
					.then(lease => {
						if (lease) {
							r.lease = lease;
							r.renewedAt = at;
							this.logger.info(`Sweeper: takes ${r.slug} (released by another replica); it steps at its turn in the round`);
							this.kick();
						} else if (delay > 0 && retry && !this.closing) {
							const timer = setTimeout(() => {
								this.takeTimers.delete(timer);
								this.takeNow(r, false);
							}, delay + 50);
							this.takeTimers.add(timer);
						}
					})
					// The round's turn of the network reads the lease again.
					.catch(err => this.logger.warn(`Sweeper: lease of ${r.slug} not read: ${(err as Error).message}`))
					.finally(() => {
						r.taking = null;
					});
			},

			/** A round now, or right after the one running. */
			kick(this: SweeperThis) {
				if (this.closing) return;
				if (this.running) {
					this.again = true;
					return;
				}
				this.running = this.tick()
					.catch(err => {
						this.logger.warn(`Sweeper: ${(err as Error).message}`);
						captureLoopError(err, { service: this.name });
					})
					.finally(() => {
						this.running = null;
						if (this.again && this.timer) {
							this.again = false;
							this.kick();
						}
					});
			},

			shareView(this: SweeperThis): ShareView {
				return { service: this.name, nodeID: this.broker.nodeID, ...this.balancer.view() };
			},

			/** Gives a network's lease up between two of its steps (no step of it runs now), takeable at once. */
			async handOverNow(this: SweeperThis, r: RunnerEntry) {
				const waiters = r.handOver.splice(0);
				const lease = r.lease;
				r.lease = null;
				const releasing = lease !== null ? releaseLease(appOf(this.broker).models, lease, Date.now()).then(() => true, () => false) : Promise.resolve(false);
				r.releasing = releasing.then(() => undefined);
				const released = await releasing.finally(() => {
					r.releasing = null;
				});
				if (released) {
					this.logger.info(`Sweeper: hands ${r.slug} over (fair share)`);
					Promise.resolve(this.broker.broadcast(LEASE_RELEASED_EVENT, { service: this.name, leaseId: r.leaseId, stopping: false })).catch(() => undefined);
				}
				waiters.forEach(w => w(released));
			},

			async refreshNetworks(this: SweeperThis) {
				const app = appOf(this.broker);
				const networks = (await this.broker.call("networks.watchable", { chainType: opts.chainType })) as WatchableNetwork[];
				for (const network of networks) {
					const rpcUrl = rpcUrlFor(app.config.watchers, network.slug);
					if (!rpcUrl || this.runners.has(network.id)) continue;
					const labels = (outcome: SweepOutcome) => ({ network: network.slug, outcome });
					const runner = opts.createRunner(this, app, network, rpcUrl, {
						onFailure: err => captureLoopError(err, { service: this.name, network: network.slug }),
						onOutcome: outcome => countMetric(this.broker, METRIC.sweepOutcomes, labels(outcome)),
						onBlocked: scope => countMetric(this.broker, METRIC.sweepsBlocked, { network: network.slug, scope }),
					});
					if (!runner) continue;
					startCounters(this.broker, METRIC.sweepOutcomes, SWEEP_OUTCOMES.map(labels));
					startCounters(this.broker, METRIC.sweepsBlocked, SWEEP_HOLD_SCOPES.map(scope => ({ network: network.slug, scope })));
					const leaseId = uuidv5(`sweep:${network.id}`, CATALOGUE_NAMESPACE);
					await ensureCursor(app.models, leaseId, "sweep", app.clock.now());
					this.runners.set(network.id, { runner, network, leaseId, lease: null, slug: network.slug, handOver: [], renewedAt: 0, releasing: null, taking: null });
					this.logger.info(`Sweeper: sweeping ${network.slug} through ${redactUrl(rpcUrl)}`);
				}
			},

			/** The networks this service sweeps (leader: holds the lease) or stands by for, for the node's /readyz. */
			sweeperReadiness(this: SweeperThis): SweeperReadiness {
				const networks = [...this.runners.values()].map(r => ({ slug: r.slug, chainType: opts.chainType, role: r.lease ? ("leader" as const) : ("standby" as const) }));
				return { networks: networks.sort((a, b) => a.slug.localeCompare(b.slug)), shares: [this.shareView()] };
			},

			/**
			 * One round: the lease of each network (taken or renewed), then a step where it is held. The
			 * leases are renewed while a step runs (a heartbeat at a third of SWEEP_LEASE_MS: the stepping
			 * network's and those of the networks waiting for their turn): once the stepping one's
			 * renewal fails the step is aborted between sweeps, and every write it still tries is refused
			 * by the fence (lib/sweeps/store.ts), so a node that lost its lease mid-step changes nothing.
			 */
			async tick(this: SweeperThis) {
				const { models, config } = appOf(this.broker);
				await this.refreshNetworks();
				for (const r of this.runners.values()) {
					try {
						// A hand-over or a take outside the round under way: its outcome first.
						while (r.releasing || r.taking) await (r.releasing ?? r.taking);
						// Between two steps of this network: a hand-over the fair share asked for.
						if (r.handOver.length) {
							await this.handOverNow(r);
							continue;
						}
						this.stepping = r;
						// The round is one network after another: the others' leases are kept alive meanwhile.
						await this.renewWaiting(r);
						const at = Date.now();
						if (r.lease && !(await renewLease(models, r.lease, config.sweeper.leaseMs, at))) r.lease = null;
						if (!r.lease) r.lease = await acquireLease(models, r.leaseId, this.owner, config.sweeper.leaseMs, at, this.balancer.takeDelayMs(r.leaseId));
						if (r.lease) {
							r.renewedAt = at;
							// A token switched on (or its contract, or the confirmations, changed) since the last step.
							const fresh = await readNetworkCatalogue(models, r.network.id);
							if (fresh) Object.assign(r.network, { requiredConfirmations: fresh.requiredConfirmations, tokens: fresh.tokens });
							await this.stepWithHeartbeat(r, r.lease);
						}
					} catch (err) {
						if (err instanceof LeaseLostError) {
							r.lease = null;
							this.logger.warn(`Sweeper: lease on ${r.slug} lost during a step; it stopped and wrote nothing more`);
							continue;
						}
						this.logger.warn(`Sweeper step failed on ${r.slug}: ${(err as Error).message}`);
						captureLoopError(err, { service: this.name, network: r.slug });
					} finally {
						if (this.stepping === r) this.stepping = null;
					}
					// Asked while this network stepped: handed over now, not a round later.
					if (r.handOver.length) await this.handOverNow(r).catch(() => undefined);
				}
			},

			async stepWithHeartbeat(this: SweeperThis, r: RunnerEntry, lease: Lease) {
				const { models, config } = appOf(this.broker);
				const lost = new AbortController();
				let renewing: Promise<void> | null = null;
				const beat = setInterval(() => {
					if (renewing || lost.signal.aborted) return;
					renewing = renewLease(models, lease, config.sweeper.leaseMs, Date.now())
						.then(held => {
							if (!held) lost.abort();
							else r.renewedAt = Date.now();
						})
						// A database that cannot be reached cannot confirm the lease either: stop writing.
						.catch(() => lost.abort())
						// The other networks this node leads wait for this step (one network steps at a time):
						// their leases are renewed too, else a round longer than SWEEP_LEASE_MS (a slow node,
						// a busy machine) lets them lapse, unled until a replica takes them again.
						.then(() => this.renewWaiting(r))
						.finally(() => {
							renewing = null;
						});
				}, Math.max(50, Math.floor(config.sweeper.leaseMs / 3)));
				try {
					await r.runner.step(lease, lost.signal);
				} finally {
					clearInterval(beat);
					await renewing;
				}
				if (lost.signal.aborted) throw new LeaseLostError(lease.networkId);
			},
		},

		created(this: SweeperThis) {
			if (opts.productionKey && appOf(this.broker).config.env === "production" && !opts.productionKey.present(appOf(this.broker))) {
				throw new Error(`Configuration: ${opts.productionKey.variable} is required in production on nodes running ${this.name}`);
			}
			this.runners = new Map();
			this.timer = null;
			this.running = null;
			this.owner = `${this.broker.nodeID}:${process.pid}:${this.name}`;
			this.again = false;
			this.stepping = null;
			this.closing = false;
			this.takeTimers = new Set();
			const { config, models } = appOf(this.broker);
			this.balancer = new LeaseBalancer({
				broker: this.broker,
				serviceName: this.name,
				models,
				rebalanceMs: config.watchers.rebalanceMs,
				deferMs: config.watchers.takeDeferMs,
				handOverMs: config.watchers.handOverMs,
				logger: this.logger,
				leases: () =>
					[...this.runners.values()].map(r => ({
						leaseId: r.leaseId,
						slug: r.slug,
						leading: () => r.lease !== null,
						releasable: () => r.lease !== null,
						release: () => {
							const done = new Promise<boolean>(resolve => r.handOver.push(resolve));
							// Only one network steps at a time: any other is between two of its steps, so it is
							// handed over now, not at its turn in a round that may take long; the stepping one
							// right after its step.
							if (this.stepping !== r && !r.releasing) void this.handOverNow(r);
							else this.kick();
							return done;
						},
					})),
			});
		},

		async started(this: SweeperThis) {
			const { config } = appOf(this.broker);
			const loop = () => {
				if (!this.running) this.kick();
			};
			this.timer = setInterval(loop, config.sweeper.pollMs);
			loop();
			this.balancer.start();
		},

		async stopped(this: SweeperThis) {
			this.closing = true;
			this.takeTimers.forEach(t => clearTimeout(t));
			this.takeTimers.clear();
			if (this.timer) clearInterval(this.timer);
			this.timer = null;
			await this.balancer.stop();
			while (this.running) await this.running;
			const { models } = appOf(this.broker);
			for (const r of this.runners.values()) {
				// A take outside the round (or a hand-over) still under way: its lease is given up below.
				while (r.taking || r.releasing) await (r.taking ?? r.releasing);
				r.runner.close?.();
				// No step runs now: give the lease up so a standby takes the network at once, not after SWEEP_LEASE_MS.
				// Free for anyone at once (no time): whichever replica polls first, not only one below its share.
				if (r.lease) await releaseLease(models, r.lease).then(() => this.broker.broadcast(LEASE_RELEASED_EVENT, { service: this.name, leaseId: r.leaseId, stopping: true }), () => undefined).catch(() => undefined);
				r.lease = null;
				r.handOver.splice(0).forEach(w => w(false));
			}
		},
	};
	return schema as unknown as ServiceSchema;
}
