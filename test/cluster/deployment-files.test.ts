/**
 * The deployment files (Dockerfile, docker-compose.yml, k8s/) parse, agree with the code (service
 * names, configuration contract, transporter URL), and their health checks really work against a
 * running node. Docker and Kubernetes are not available here: this is what can be checked without them.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseAllDocuments, parse } from "yaml";
import { loadConfig, Env } from "../../lib/config";
import { availableServices } from "../../lib/node";
import { KafkaJsTransporter } from "../../lib/kafkajs-transporter";
import { transporterOption } from "../../moleculer.config";
import { startNode, TestNode } from "../helpers/harness";
import { DEPLOYED_CORE_SERVICES, freePort, uniqueId } from "./cluster.helpers";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");

type Doc = Record<string, any>;
const SAMPLE_SECRET = "s".repeat(64);

function k8sDocs(): Array<{ file: string; doc: Doc }> {
	const out: Array<{ file: string; doc: Doc }> = [];
	for (const file of fs.readdirSync(path.join(ROOT, "k8s")).filter(f => /\.ya?ml$/.test(f))) {
		for (const d of parseAllDocuments(read(`k8s/${file}`))) {
			expect(d.errors).toEqual([]);
			const doc = d.toJS() as Doc | null;
			if (doc) out.push({ file, doc });
		}
	}
	return out;
}

/** Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?message}` with the given values; `$$` is a literal `$`. */
function interpolate(value: string, vars: Env): string {
	return value
		.replace(/\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g, (_m, name: string, op: string | undefined, arg: string) => {
			const v = vars[name];
			if (v !== undefined && v !== "") return v;
			if (op === "?") throw new Error(`${name} is required: ${arg}`);
			return op === "-" ? arg : "";
		})
		.replace(/\$\$/g, "$");
}

function runNode(script: string): Promise<number> {
	return new Promise(resolve => {
		execFile(process.execPath, ["-e", script], { timeout: 10_000 }, err => resolve(err ? ((err as { code?: number }).code ?? 1) : 0));
	});
}

describe("Dockerfile", () => {
	const dockerfile = read("Dockerfile");

	it("builds in stages on node:22-slim and runs the compiled start script as a non-root user", () => {
		expect(dockerfile.match(/^FROM node:22-slim AS \w+$/gm)).toHaveLength(2);
		for (const step of ["RUN npm ci", "npm run build", "npm prune --omit=dev"]) expect(dockerfile).toContain(step);
		expect(dockerfile).toMatch(/^USER node$/m);
		expect(dockerfile.trim().split("\n").pop()).toBe('CMD ["node", "dist/lib/start.js"]');
		// The CMD target is what `npm run build` produces from lib/start.ts.
		expect(fs.existsSync(path.join(ROOT, "lib/start.ts"))).toBe(true);
	});

	it("keeps secrets, local state and the git history out of the build context", () => {
		const ignored = read(".dockerignore").split("\n").map(l => l.trim());
		for (const entry of [".git", "node_modules", "dist", "data", ".env", ".env.*", "compose.env"]) expect(ignored).toContain(entry);
	});
});

describe("docker-compose.yml", () => {
	const compose = parse(read("docker-compose.yml"), { merge: true }) as Doc;
	const example = Object.fromEntries(
		read("compose.env.example")
			.split("\n")
			.filter(l => /^[A-Z0-9_]+=/.test(l))
			.map(l => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
	) as Env;
	const filled: Env = { ...example, MYSQL_PASSWORD: "db-pass", MYSQL_ROOT_PASSWORD: "root-pass", AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` };

	it("has MySQL, Redis, Kafka and the two gateway nodes, each with a health check", () => {
		expect(Object.keys(compose.services).sort()).toEqual(["api", "core", "kafka", "mysql", "redis"]);
		for (const [name, svc] of Object.entries<Doc>(compose.services)) expect([name, Array.isArray(svc.healthcheck?.test)]).toEqual([name, true]);
	});

	it("starts the gateway nodes only once their dependencies are healthy", () => {
		for (const name of ["api", "core"]) {
			const deps = compose.services[name].depends_on as Record<string, { condition: string }>;
			expect(Object.keys(deps).sort()).toEqual(["kafka", "mysql", "redis"]);
			for (const dep of Object.values(deps)) expect(dep.condition).toBe("service_healthy");
		}
	});

	it("documents every variable it reads in compose.env.example, and requires the secrets", () => {
		const text = read("docker-compose.yml");
		const used = new Set([...text.matchAll(/\$\{([A-Z0-9_]+)/g)].map(m => m[1]));
		for (const name of used) expect([name, name in example]).toEqual([name, true]);
		for (const secret of ["MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD", "AUTH_JWT_SECRET", "AUTH_REFRESH_SECRET", "MASTER_KEY"]) {
			expect(text).toContain(`\${${secret}:?`);
			expect(example[secret]).toBe(""); // no default secret ships
		}
	});

	it("gives the nodes a configuration the code accepts: Kafka transporter, MySQL, Redis, production secrets", () => {
		const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-compose-"));
		try {
			for (const [name, services] of [["api", ["api"]], ["core", DEPLOYED_CORE_SERVICES]] as const) {
				const raw = compose.services[name].environment as Record<string, string>;
				const env = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, interpolate(String(v), filled)])) as Env;
				const config = loadConfig({ ...env, DATA_DIR: dataDir });
				expect(config).toMatchObject({ env: "production", transporter: "kafka://kafka:9092", services: [...services], cacher: "redis" });
				expect(config.databaseUrl).toBe("mysql://cryptopay:db-pass@mysql:3306/cryptopay");
				expect(transporterOption(config, env)).toBeInstanceOf(KafkaJsTransporter);
				for (const s of config.services!) expect(availableServices()).toHaveProperty(s);
			}
			expect(compose.services.api.ports).toEqual(["3000:3000"]);
			// Without the secrets compose refuses to start (`:?`).
			expect(() => interpolate(String(compose.services.api.environment.MASTER_KEY), {})).toThrow(/MASTER_KEY is required/);
		} finally {
			fs.rmSync(dataDir, { recursive: true, force: true });
		}
	});
});

describe("k8s manifests", () => {
	const docs = k8sDocs();
	const byKind = (kind: string) => docs.filter(d => d.doc.kind === kind).map(d => d.doc);

	it("parse, and every object names itself and lives in the cryptopay namespace", () => {
		expect(docs.length).toBeGreaterThanOrEqual(10);
		for (const { file, doc } of docs) {
			if (doc.kind === "Kustomization") continue;
			expect([file, typeof doc.apiVersion, typeof doc.metadata?.name]).toEqual([file, "string", "string"]);
			if (doc.kind !== "Namespace") expect([file, doc.metadata.namespace]).toEqual([file, "cryptopay"]);
		}
		expect(byKind("Namespace").map(n => n.metadata.name)).toEqual(["cryptopay"]);
	});

	it("kustomization lists files that exist", () => {
		const [k] = byKind("Kustomization");
		for (const r of k.resources as string[]) expect([r, fs.existsSync(path.join(ROOT, "k8s", r))]).toEqual([r, true]);
	});

	it("runs the api and core groups with probes, limits, a locked-down container and known services", () => {
		const deployments = byKind("Deployment");
		expect(deployments.map(d => d.metadata.name).sort()).toEqual(["api", "core"]);
		const configMaps = new Set(byKind("ConfigMap").map(c => c.metadata.name));
		const secrets = new Set(byKind("Secret").map(s => s.metadata.name));
		for (const d of deployments) {
			expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
			const [c] = d.spec.template.spec.containers as Doc[];
			const services = (c.env as Doc[]).find(e => e.name === "SERVICES")!.value.split(",");
			for (const s of services) expect(availableServices()).toHaveProperty(s);
			expect(c.readinessProbe).toBeDefined();
			expect(c.livenessProbe).toBeDefined();
			expect(c.resources.requests).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
			expect(c.resources.limits).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
			expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
			expect(d.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true });
			for (const ref of c.envFrom as Doc[]) {
				if (ref.configMapRef) expect(configMaps.has(ref.configMapRef.name)).toBe(true);
				if (ref.secretRef) expect(secrets.has(ref.secretRef.name)).toBe(true);
			}
		}
		const api = deployments.find(d => d.metadata.name === "api")!;
		expect(api.spec.template.spec.containers[0].readinessProbe.httpGet).toMatchObject({ path: "/api/v1/", port: "http" });
		expect((api.spec.template.spec.containers[0].env as Doc[]).find(e => e.name === "SERVICES")!.value).toBe("api");
		const core = deployments.find(d => d.metadata.name === "core")!;
		expect((core.spec.template.spec.containers[0].env as Doc[]).find(e => e.name === "SERVICES")!.value.split(",")).toEqual(DEPLOYED_CORE_SERVICES);
		const [service] = byKind("Service");
		expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
	});

	it("has an autoscaling/v2 HPA template for the watcher-evm group", () => {
		const [hpa] = byKind("HorizontalPodAutoscaler");
		const file = docs.find(d => d.doc === hpa)!.file;
		expect(hpa.apiVersion).toBe(`autoscaling/v2`);
		expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: "watcher-evm" });
		expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
		expect(file).toBe("hpa-watcher-evm.yaml");
	});

	it("ConfigMap + Secret make a configuration the code accepts once the placeholders are replaced, and not before", () => {
		const [cm] = byKind("ConfigMap");
		const [secret] = byKind("Secret");
		const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-k8s-"));
		try {
			const base: Env = { ...cm.data, ...secret.stringData, DATA_DIR: dataDir, SERVICES: "api" };
			// Shipped placeholders are refused in production: a forgotten secret stops the node.
			expect(() => loadConfig(base)).toThrow(/at least 32 characters/);
			const env: Env = { ...base, AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` };
			const config = loadConfig(env);
			expect(config).toMatchObject({ env: "production", trustProxy: true, metrics: true, cacher: "redis" });
			expect(transporterOption(config, env)).toBeInstanceOf(KafkaJsTransporter);
		} finally {
			fs.rmSync(dataDir, { recursive: true, force: true });
		}
	});
});

describe("health checks against a running node", () => {
	let api: TestNode;
	let core: TestNode;
	let metricsPort: number;

	beforeAll(async () => {
		metricsPort = await freePort();
		const ns = uniqueId("hc");
		api = await startNode({ services: ["api"], env: { TRANSPORTER: "nats://127.0.0.1:4222", NAMESPACE: ns } });
		core = await startNode({
			services: ["mail"],
			shareWith: api,
			env: { TRANSPORTER: "nats://127.0.0.1:4222", NAMESPACE: ns, METRICS: "true", METRICS_PORT: String(metricsPort) },
		});
	}, 30_000);
	afterAll(async () => {
		await core?.stop();
		await api?.stop();
	});

	const composeCheck = (service: string) => {
		const compose = parse(read("docker-compose.yml"), { merge: true }) as Doc;
		const test = compose.services[service].healthcheck.test as string[];
		expect(test.slice(0, 3)).toEqual(["CMD", "node", "-e"]);
		return interpolate(test[3], {});
	};
	const k8sProbe = (deployment: string, probe: string) => {
		const d = k8sDocs().find(x => x.doc.kind === "Deployment" && x.doc.metadata.name === deployment)!.doc;
		const cmd = d.spec.template.spec.containers[0][probe].exec.command as string[];
		expect(cmd.slice(0, 2)).toEqual(["node", "-e"]);
		return cmd[2];
	};

	it("the api node's check passes on a live gateway and fails where nothing answers", async () => {
		const port = new URL(api.baseUrl).port;
		const script = composeCheck("api");
		expect(await runNode(script.replace("127.0.0.1:3000", `127.0.0.1:${port}`))).toBe(0);
		expect(await runNode(script.replace("127.0.0.1:3000", `127.0.0.1:${await freePort()}`))).not.toBe(0);
	});

	it("the core node's check (compose and k8s) passes when the transporter is connected, and fails otherwise", async () => {
		for (const script of [composeCheck("core"), k8sProbe("core", "readinessProbe"), k8sProbe("core", "startupProbe")]) {
			expect(script).toContain("127.0.0.1:3030/metrics");
			expect(await runNode(script.replace("127.0.0.1:3030", `127.0.0.1:${metricsPort}`))).toBe(0);
			expect(await runNode(script.replace("127.0.0.1:3030", `127.0.0.1:${await freePort()}`))).not.toBe(0);
		}
		// A node whose transit is not connected reports 0: the check must fail on it.
		const withoutTransit = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(r => r.text());
		const disconnected = withoutTransit.replace(/^(moleculer_transit_connected\{[^}]*\}) 1$/m, "$1 0");
		expect(disconnected).not.toBe(withoutTransit);
		const [, source, flags] = composeCheck("core").match(/\/(\^moleculer_transit_connected.*)\/([a-z]*)\.test/)!;
		const re = new RegExp(source, flags);
		expect(re.test(withoutTransit)).toBe(true);
		expect(re.test(disconnected)).toBe(false);
	});
});
