/**
 * What every chain's sweeper service shares (docs/withdrawals.md "The sweeper service"): the
 * networks it sweeps (active networks of its chain type with an RPC URL, RPC_URL_<SLUG>), one lease
 * per network so one node sweeps it at a time (lib/watchers/store.ts leases, on a row of their own),
 * the step loop, and the `status` action for the REPL. `sweeper-evm` and `sweeper-bitcoin` only
 * say how to build a runner for a network.
 */
import type { Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import { v5 as uuidv5 } from "uuid";
import { App, appOf } from "../lib/app";
import { notFound } from "../lib/errors";
import { captureLoopError } from "../lib/error-tracking";
import { countMetric, METRIC, startCounters, SWEEP_HOLD_SCOPES, SWEEP_OUTCOMES, SweepOutcome } from "../lib/metrics";
import { clearHoldsAt } from "../lib/sweeps/holds";
import type { SweepHoldScope } from "../models/sweep.model";
import { CATALOGUE_NAMESPACE } from "../lib/networks/catalogue";
import { redactUrl, rpcUrlFor } from "../lib/watchers/config";
import { acquireLease, ensureCursor, Lease, releaseLease, renewLease } from "../lib/watchers/store";
import type { WatchableNetwork } from "../services/networks.service";

export interface SweepStepper {
	step(): Promise<void>;
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
	 * A runner for one network, or null when the network cannot be swept (a warning says why).
	 * `hooks.onFailure` reports a failed sweep the runner logs and goes past (error tracking);
	 * `hooks.onOutcome` counts its sweeps' steps (metrics).
	 */
	createRunner(service: Service, app: App, network: WatchableNetwork, rpcUrl: string, hooks: SweepRunnerHooks): SweepStepper | null;
}

interface SweeperMethods {
	tick(): Promise<void>;
	refreshNetworks(): Promise<void>;
}

interface SweeperVars {
	runners: Map<string, { runner: SweepStepper; leaseId: string; lease: Lease | null; slug: string }>;
	timer: NodeJS.Timeout | null;
	running: Promise<void> | null;
	owner: string;
}

type SweeperThis = Service & SweeperVars & SweeperMethods;

export function SweeperMixin(opts: SweeperMixinOptions): ServiceSchema {
	const schema: Partial<ServiceSchema<ServiceSettingSchema, SweeperMethods & Record<string, any>, SweeperVars>> = {
		dependencies: ["networks", "transactions", "withdrawals"],

		actions: {
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
						out.push({
							networkId,
							slug: r.slug,
							leader: Boolean(r.lease),
							sweeps: recent.map(s => ({ id: s.id, kind: s.kind, status: s.status, txHash: s.txHash, nonce: s.nonce, reason: s.reason, bridgeState: s.bridgeState })),
							holds: holds.map(h => ({ scope: h.scope, address: h.address, tokenId: h.tokenId || null, failures: h.failures, reason: h.reason, blocked: Boolean(h.blockedAt), blockedAt: h.blockedAt, nextAttemptAt: h.blockedAt ? null : h.nextAttemptAt })),
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
					const cleared = await clearHoldsAt(models, network.id, ctx.params.address);
					if (cleared > 0) this.logger.warn(`Sweeper: ${cleared} hold(s) on ${ctx.params.address} (${network.slug}) cleared by support`);
					return { network: network.slug, address: ctx.params.address, cleared };
				},
			},
		},

		methods: {
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
					this.runners.set(network.id, { runner, leaseId, lease: null, slug: network.slug });
					this.logger.info(`Sweeper: sweeping ${network.slug} through ${redactUrl(rpcUrl)}`);
				}
			},

			/** One round: the lease of each network (taken or renewed), then a step where it is held. */
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
						captureLoopError(err, { service: this.name, network: r.slug });
					}
				}
			},
		},

		created(this: SweeperThis) {
			this.runners = new Map();
			this.timer = null;
			this.running = null;
			this.owner = `${this.broker.nodeID}:${process.pid}:${this.name}`;
		},

		async started(this: SweeperThis) {
			const { config } = appOf(this.broker);
			const loop = () => {
				if (this.running) return;
				this.running = this.tick()
					.catch(err => {
						this.logger.warn(`Sweeper: ${(err as Error).message}`);
						captureLoopError(err, { service: this.name });
					})
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
			const { models } = appOf(this.broker);
			for (const r of this.runners.values()) {
				r.runner.close?.();
				// No step runs now: give the lease up so a standby takes the network at once, not after SWEEP_LEASE_MS.
				if (r.lease) await releaseLease(models, r.lease).catch(() => undefined);
				r.lease = null;
			}
		},
	};
	return schema as unknown as ServiceSchema;
}
