/**
 * `npm run bench` starts its gateway as a production node with every service, from an environment
 * it builds from scratch (bench/common.ts gatewayEnv). That node must start: a production
 * requirement added to a service (SWEEPER_PRIVATE_KEY once) otherwise breaks the bench silently,
 * since the bench is not part of the suite. Here the same environment starts the same node, on the
 * embedded database (the bench's sqlite-create-intent case), in-process.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ServiceBroker } from "moleculer";
import { gatewayEnv } from "../../bench/common";
import { loadConfig } from "../../lib/config";
import { availableServices, createNode } from "../../lib/node";
import { BACKEND } from "../helpers/harness";

// The bench's own database choice, whatever the project: run once.
(BACKEND === "sqlite" ? describe : describe.skip)("the bench's gateway configuration", () => {
	let dataDir: string;
	let broker: ServiceBroker | null = null;
	beforeAll(() => (dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bench-config-"))));
	afterAll(async () => {
		await broker?.stop();
		fs.rmSync(dataDir, { recursive: true, force: true });
	});

	it("starts a production node with every service, with no variable beyond what the bench sets", async () => {
		const secret = () => crypto.randomBytes(32).toString("hex");
		const env = gatewayEnv({ name: "suite", databaseUrl: "", redisUrl: "", redisPrefix: "cpg-bench-test:", dataDir, secrets: { jwt: secret(), refresh: secret(), master: secret() } }, 0, "production");
		const config = loadConfig(env);
		expect(config.env).toBe("production");
		expect(config.services).toBeNull(); // every service, as `npm start` ships it
		broker = await createNode({ config, env });
		await broker.start();
		const running = broker.services.map(s => s.name);
		for (const name of Object.keys(availableServices())) expect(running).toContain(name);
	}, 120_000);
});
