/**
 * What the NetworkWatcher tests (test/lib/watchers/) share: the node whose database they run on,
 * and a watcher on it with the tests' defaults.
 */
import { watchersConfigFromEnv, type WatchersConfig } from "../../lib/watchers/config";
import { NetworkWatcher, type RunnerDeps, type WatchedNetwork, type WatcherLogger } from "../../lib/watchers/runner";
import { startNode, type StartOptions, type TestNode } from "./harness";

/**
 * A node (by default running only `networks`: the catalogue in its database) started before the
 * tests of the describe (or file) this is called in and stopped after them; `set` receives it.
 */
export function nodeForTests(set: (node: TestNode) => void, opts: StartOptions = { services: ["networks"] }): void {
	let node: TestNode | undefined;
	beforeAll(async () => {
		node = await startNode(opts);
		set(node);
	}, 60_000);
	afterAll(async () => {
		await node?.stop();
	});
}

/** A logger that keeps each message (its first argument) in `logs`. */
export function loggerInto(logs: string[]): WatcherLogger {
	return { info: (m: unknown) => logs.push(String(m)), warn: (m: unknown) => logs.push(String(m)), error: (m: unknown) => logs.push(String(m)) };
}

/** A network watched for its native coin only (no contract). */
export function nativeCoinNetwork(n: { id: string; slug: string; chainType: string; tokenId: string; symbol: string; decimals: number; requiredConfirmations?: number }): WatchedNetwork {
	return { id: n.id, slug: n.slug, chainType: n.chainType, requiredConfirmations: n.requiredConfirmations ?? 1, tokens: [{ tokenId: n.tokenId, symbol: n.symbol, contractAddress: "", decimals: n.decimals }] };
}

/**
 * A NetworkWatcher on `node`'s database with the tests' defaults: the environment's settings
 * polling every 20 ms (`config` on top), a logger that drops everything, the wall clock, owner
 * "test-owner"; `deps` gives the rest and replaces any default.
 */
export function testWatcher(node: TestNode, deps: Omit<RunnerDeps, "sequelize" | "models" | "config" | "logger" | "now" | "owner"> & Partial<Pick<RunnerDeps, "logger" | "now" | "owner">> & { config?: Partial<WatchersConfig> }): NetworkWatcher {
	const { config, ...rest } = deps;
	return new NetworkWatcher({
		sequelize: node.app.sequelize,
		models: node.app.models,
		logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
		now: () => new Date(),
		owner: "test-owner",
		...rest,
		config: { ...watchersConfigFromEnv({}), pollMs: 20, ...config },
	});
}
