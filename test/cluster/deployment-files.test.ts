/**
 * The deployment files (Dockerfile, docker-compose.yml, k8s/) parse, pass the Kubernetes API
 * schemas, agree with the code (service names, configuration contract, transporter URL, the health
 * port) and with each other (HPA targets, PDB selectors, referenced ConfigMaps, Secrets and
 * volumes), and compose's health check command exits as Docker needs it to. Docker and Kubernetes
 * are not available here: this is what can be checked without them.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Keypair } from "@solana/web3.js";
import { encodeBase58 } from "ethers";
import { parseAllDocuments, parse } from "yaml";
import { loadConfig, Env } from "../../lib/config";
import { availableServices } from "../../lib/node";
import { KafkaJsTransporter, kafkaOptionsFromEnv } from "../../lib/kafkajs-transporter";
import { CATALOGUE } from "../../lib/networks/catalogue";
import { envSlug } from "../../lib/watchers/config";
import { actsOn, scopeOf } from "../../lib/setting-scopes";
import { brokerOptions, transporterOption, transporterWarnings } from "../../moleculer.config";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { DEPLOYED_CORE_SERVICES, freePort } from "./cluster.helpers";

const ROOT = path.resolve(__dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");

type Doc = Record<string, any>;
const SAMPLE_SECRET = "s".repeat(64);
const SAMPLE_SWEEPER_KEY = "ab".repeat(32);
const SAMPLE_TON_SWEEPER_KEY = "ef".repeat(32);
/** A Solana secret key as Phantom exports it (base58 of the 64-byte secret key). */
const SAMPLE_SOLANA_SWEEPER_KEY = encodeBase58(Keypair.fromSeed(new Uint8Array(32).fill(0xcd)).secretKey);
const SAMPLE_POLKADOT_SWEEPER_KEY = `0x${"ab".repeat(32)}`;
const SAMPLE_KAFKA_PASSWORD = "cd".repeat(16);
/** The health server's port (CONTRACT: HEALTH_PORT, default 3031) and the compose check of it. */
const HEALTH_PORT = 3031;
const COMPOSE_READY_CHECK = "fetch('http://127.0.0.1:3031/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))";
/** The node groups that run watchers or sweepers, and their SERVICES (CONTRACT "Node groups"). */
const CHAIN_GROUPS: Record<string, string[]> = {
	"watcher-evm": ["watcher-evm"],
	"watcher-bitcoin": ["watcher-bitcoin"],
	"watcher-solana": ["watcher-solana"],
	"watcher-ton": ["watcher-ton"],
	"watcher-polkadot": ["watcher-polkadot"],
	sweeper: ["sweeper-evm", "sweeper-bitcoin", "sweeper-ton", "sweeper-solana", "sweeper-polkadot"],
};

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

/** Each object's schema error (null: valid), from kubernetes-models run by test/helpers/k8s-validate.mjs. */
function validateK8s(objects: Doc[]): Promise<Array<string | null>> {
	return new Promise((resolve, reject) => {
		const child = execFile(process.execPath, [path.join(ROOT, "test/helpers/k8s-validate.mjs")], { cwd: ROOT, timeout: 30_000 }, (err, stdout, stderr) => {
			if (err) reject(new Error(`k8s-validate.mjs failed: ${stderr || err.message}`));
			else resolve(JSON.parse(stdout) as Array<string | null>);
		});
		child.stdin!.end(JSON.stringify(objects));
	});
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

/** KEY=VALUE lines of an env file; `commented` reads the `# KEY=VALUE` examples instead. */
function envFile(file: string, commented = false): Env {
	const line = commented ? /^# ([A-Z0-9_]+)=(.*)$/ : /^([A-Z0-9_]+)=(.*)$/;
	return Object.fromEntries(read(file).split("\n").flatMap(l => (line.exec(l) ? [line.exec(l)!.slice(1, 3)] : []))) as Env;
}

/** The catalogue network whose RPC_URL_<SLUG> variable this is, if any. */
const networkOfRpcVariable = (name: string) => CATALOGUE.find(n => `RPC_URL_${envSlug(n.slug)}` === name);
/** The catalogue network whose REQUIRED_CONFIRMATIONS_<SLUG> variable this is, if any. */
const networkOfConfirmationsVariable = (name: string) => CATALOGUE.find(n => `REQUIRED_CONFIRMATIONS_${envSlug(n.slug)}` === name);

/**
 * The variables among `names` that a node running `services` does not act on (lib/setting-scopes.ts):
 * a catalogue setting anywhere but the core group, a watcher or sweeper setting outside those groups.
 */
const notActedOn = (names: string[], services: string[]) => names.filter(name => !actsOn(name, services));

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

	it("keeps secrets, local state and the git history out of the build context and the repository", () => {
		const ignored = read(".dockerignore").split("\n").map(l => l.trim());
		for (const entry of [".git", "node_modules", "dist", "data", ".env", ".env.*", "compose.env", "chains.env", "catalogue.env"]) expect(ignored).toContain(entry);
		const gitIgnored = read(".gitignore").split("\n").map(l => l.trim());
		for (const entry of ["compose.env", "chains.env", "catalogue.env"]) expect(gitIgnored).toContain(entry);
	});
});

describe("docker-compose.yml", () => {
	const compose = parse(read("docker-compose.yml"), { merge: true }) as Doc;
	const example = envFile("compose.env.example");
	const filled: Env = {
		...example,
		MYSQL_PASSWORD: "db-pass",
		MYSQL_ROOT_PASSWORD: "root-pass",
		AUTH_JWT_SECRET: SAMPLE_SECRET,
		AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`,
		MASTER_KEY: `m${SAMPLE_SECRET}`,
		SWEEPER_PRIVATE_KEY: SAMPLE_SWEEPER_KEY,
		SWEEPER_PRIVATE_KEY_TON: SAMPLE_TON_SWEEPER_KEY,
		SWEEPER_PRIVATE_KEY_SOLANA: SAMPLE_SOLANA_SWEEPER_KEY,
		SWEEPER_PRIVATE_KEY_POLKADOT: SAMPLE_POLKADOT_SWEEPER_KEY,
		KAFKA_SASL_PASSWORD: SAMPLE_KAFKA_PASSWORD,
	};
	const gatewayNodes = ["api", "core", ...Object.keys(CHAIN_GROUPS)];
	const environmentOf = (name: string) =>
		Object.fromEntries(Object.entries(compose.services[name].environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v), filled)])) as Env;

	it("has MySQL, Redis, Kafka, the api and core nodes, the watchers and the sweeper, each with a health check", () => {
		expect(Object.keys(compose.services).sort()).toEqual(["api", "core", "kafka", "mysql", "redis", "sweeper", "watcher-bitcoin", "watcher-evm", "watcher-polkadot", "watcher-solana", "watcher-ton"]);
		for (const [name, svc] of Object.entries<Doc>(compose.services)) expect([name, Array.isArray(svc.healthcheck?.test)]).toEqual([name, true]);
	});

	it("checks every gateway node through /readyz on its health port", () => {
		for (const name of gatewayNodes) {
			const svc = compose.services[name];
			expect([name, svc.image]).toEqual([name, "cryptopay-gateway:local"]);
			expect([name, svc.healthcheck.test]).toEqual([name, ["CMD", "node", "-e", COMPOSE_READY_CHECK]]);
			// The port the check calls is the one the node listens on.
			expect([name, environmentOf(name).HEALTH_PORT]).toEqual([name, String(HEALTH_PORT)]);
		}
	});

	it("runs each watcher type and the sweepers with the services of their group", () => {
		for (const [name, services] of Object.entries(CHAIN_GROUPS)) {
			expect([name, environmentOf(name).SERVICES!.split(",")]).toEqual([name, services]);
			for (const s of services) expect(availableServices()).toHaveProperty(s);
			// Per-network settings (RPC URLs: credentials) reach only these containers, when the file exists.
			expect(compose.services[name].env_file).toEqual([{ path: "chains.env", required: false }]);
		}
		expect(compose.services.api.env_file).toBeUndefined();
		// The core's own per-network file: the catalogue settings, which act on it only.
		expect(compose.services.core.env_file).toEqual([{ path: "catalogue.env", required: false }]);
		for (const name of Object.keys(compose.services)) {
			if (name !== "sweeper") expect([name, "SWEEPER_PRIVATE_KEY" in (compose.services[name].environment ?? {})]).toEqual([name, false]);
		}
		// The sweeper derives deposit keys from the seed the core node sealed in DATA_DIR; it only reads it.
		expect(compose.services.core.volumes).toContain("gateway-data:/data");
		expect(compose.services.sweeper.volumes).toEqual(["gateway-data:/data:ro"]);
	});

	it("starts the nodes only once their dependencies are healthy; the chain nodes after the core node", () => {
		for (const name of gatewayNodes) {
			const deps = compose.services[name].depends_on as Record<string, { condition: string }>;
			const expected = name in CHAIN_GROUPS ? ["core", "kafka", "mysql", "redis"] : ["kafka", "mysql", "redis"];
			expect([name, Object.keys(deps).sort()]).toEqual([name, expected]);
			for (const dep of Object.values(deps)) expect(dep.condition).toBe("service_healthy");
		}
	});

	it("runs Kafka with SASL only, for the one user the nodes log in as, and a health check that logs in too", () => {
		const kafka = compose.services.kafka;
		const env = Object.fromEntries(Object.entries(kafka.environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v), filled)])) as Env;
		// Every listener other nodes reach asks for SASL; the controller's is on the container's loopback.
		const listeners = env.KAFKA_LISTENERS!.split(",");
		const protocols = Object.fromEntries(env.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP!.split(",").map(p => p.split(":")));
		for (const l of listeners) {
			const [name, address] = l.split("://");
			if (protocols[name] !== "SASL_PLAINTEXT") expect([l, address.startsWith("127.0.0.1:")]).toEqual([l, true]);
		}
		expect(env.KAFKA_ADVERTISED_LISTENERS!.split(",").every(l => protocols[l.split("://")[0]].startsWith("SASL_"))).toBe(true);
		expect(env.KAFKA_SASL_ENABLED_MECHANISMS).toBe("PLAIN");
		const node = environmentOf("core");
		const jaas = env.KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG!;
		expect(jaas).toContain(`user_${node.KAFKA_SASL_USERNAME}="${SAMPLE_KAFKA_PASSWORD}"`);
		expect(node.KAFKA_SASL_MECHANISM).toBe("plain");
		expect((kafka.healthcheck.test as string[])[1]).toContain("--command-config");
		expect(env.SASL_PASSWORD).toBe(SAMPLE_KAFKA_PASSWORD);
	});

	it("documents every variable it reads in compose.env.example, and requires the secrets", () => {
		const text = read("docker-compose.yml");
		const used = new Set([...text.matchAll(/\$\{([A-Z0-9_]+)/g)].map(m => m[1]));
		for (const name of used) expect([name, name in example]).toEqual([name, true]);
		for (const secret of ["MYSQL_PASSWORD", "MYSQL_ROOT_PASSWORD", "AUTH_JWT_SECRET", "AUTH_REFRESH_SECRET", "MASTER_KEY", "SWEEPER_PRIVATE_KEY", "SWEEPER_PRIVATE_KEY_TON", "SWEEPER_PRIVATE_KEY_SOLANA", "SWEEPER_PRIVATE_KEY_POLKADOT", "KAFKA_SASL_PASSWORD"]) {
			expect(text).toContain(`\${${secret}:?`);
			expect(example[secret]).toBe(""); // no default secret ships
		}
	});

	it("gives each node only variables it acts on: catalogue settings to the core, watcher and sweeper settings to those nodes", () => {
		const groups: Array<[string, string[]]> = [["api", ["api", "pages"]], ["core", DEPLOYED_CORE_SERVICES], ...Object.entries(CHAIN_GROUPS)];
		for (const [name, services] of groups) {
			// Its environment, and what its env files may hold (their examples, set or commented).
			const files = (compose.services[name].env_file ?? []) as Array<{ path: string }>;
			const names = [...Object.keys(compose.services[name].environment), ...files.flatMap(f => Object.keys({ ...envFile(`${f.path}.example`), ...envFile(`${f.path}.example`, true) }))];
			expect([name, notActedOn(names, services)]).toEqual([name, []]);
		}
		// Secrets only the core's services read reach only the core.
		for (const name of gatewayNodes.filter(n => n !== "core")) {
			expect([name, ["MAILGUN_API_KEY", "PAYMENTS_WEBHOOK_SECRET"].filter(k => k in compose.services[name].environment)]).toEqual([name, []]);
		}
		expect(Object.keys(compose.services.core.environment)).toEqual(expect.arrayContaining(["MAILGUN_API_KEY", "MAILGUN_DOMAIN", "PAYMENTS_WEBHOOK_SECRET"]));
		// Every env file an example exists for: chains.env holds chain settings, catalogue.env catalogue settings.
		for (const [file, kind] of [["chains.env", "chain"], ["catalogue.env", "catalogue"]] as const) {
			const examples = Object.keys(envFile(`${file}.example`, true));
			expect([file, examples.length > 0]).toEqual([file, true]);
			for (const name of examples) expect([file, name, scopeOf(name)?.kind]).toEqual([file, name, kind]);
			expect([file, envFile(`${file}.example`)]).toEqual([file, {}]);
		}
		// The catalogue examples name networks the catalogue has, with values the configuration accepts.
		const examples = envFile("catalogue.env.example", true);
		for (const name of Object.keys(examples)) expect([name, networkOfConfirmationsVariable(name)?.slug]).toEqual([name, expect.any(String)]);
		const secrets = { AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` };
		expect(Object.keys(loadConfig({ ...examples, ...secrets }).watchers.requiredConfirmations).length).toBe(Object.keys(examples).length);
	});

	it("chains.env.example only shows RPC variables of networks the catalogue has, and sets nothing by default", () => {
		expect(envFile("chains.env.example")).toEqual({});
		const examples = envFile("chains.env.example", true);
		const rpc = Object.keys(examples).filter(k => k.startsWith("RPC_URL_"));
		expect(rpc.length).toBeGreaterThanOrEqual(2);
		for (const name of rpc) expect([name, networkOfRpcVariable(name)?.slug]).toEqual([name, expect.any(String)]);
		// Uncommented, they are a watcher configuration the code accepts.
		const rpcOnly = Object.fromEntries(rpc.map(k => [k, examples[k]])) as Env;
		const secrets = { AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` };
		expect(Object.keys(loadConfig({ ...rpcOnly, ...secrets }).watchers.rpcUrls).sort()).toEqual(rpc.map(k => k.slice("RPC_URL_".length)).sort());
	});

	it("gives the nodes a configuration the code accepts: Kafka transporter, MySQL, Redis, production secrets", () => {
		const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-compose-"));
		try {
			const groups: Array<[string, string[]]> = [["api", ["api", "pages"]], ["core", DEPLOYED_CORE_SERVICES], ...Object.entries(CHAIN_GROUPS)];
			for (const [name, services] of groups) {
				const env = environmentOf(name);
				const config = loadConfig({ ...env, DATA_DIR: dataDir });
				expect(config).toMatchObject({ env: "production", transporter: "kafka://kafka:9092", services: [...services], cacher: "redis", metrics: true });
				expect(config.databaseUrl).toBe("mysql://cryptopay:db-pass@mysql:3306/cryptopay");
				expect(transporterOption(config, env)).toBeInstanceOf(KafkaJsTransporter);
				// The transporter is a trust boundary: every node authenticates to Kafka.
				expect(kafkaOptionsFromEnv(config.transporter!, env).sasl).toEqual({ mechanism: "plain", username: "cryptopay", password: SAMPLE_KAFKA_PASSWORD });
				expect(transporterWarnings(config, env)).toEqual([]);
				for (const s of config.services!) expect(availableServices()).toHaveProperty(s);
			}
			expect(loadConfig({ ...environmentOf("sweeper"), DATA_DIR: dataDir }).sweeper).toMatchObject({ privateKey: SAMPLE_SWEEPER_KEY, tonPrivateKey: SAMPLE_TON_SWEEPER_KEY, solanaPrivateKey: SAMPLE_SOLANA_SWEEPER_KEY, polkadotPrivateKey: SAMPLE_POLKADOT_SWEEPER_KEY });
			expect(compose.services.api.ports).toEqual(["3000:3000"]);
			// Without the secrets compose refuses to start (`:?`).
			expect(() => interpolate(String(compose.services.api.environment.MASTER_KEY), {})).toThrow(/MASTER_KEY is required/);
			expect(() => interpolate(String(compose.services.sweeper.environment.SWEEPER_PRIVATE_KEY), {})).toThrow(/SWEEPER_PRIVATE_KEY is required/);
			expect(() => interpolate(String(compose.services.sweeper.environment.SWEEPER_PRIVATE_KEY_TON), {})).toThrow(/SWEEPER_PRIVATE_KEY_TON is required/);
			expect(() => interpolate(String(compose.services.sweeper.environment.SWEEPER_PRIVATE_KEY_SOLANA), {})).toThrow(/SWEEPER_PRIVATE_KEY_SOLANA is required/);
			expect(() => interpolate(String(compose.services.sweeper.environment.SWEEPER_PRIVATE_KEY_POLKADOT), {})).toThrow(/SWEEPER_PRIVATE_KEY_POLKADOT is required/);
			expect(() => interpolate(String(compose.services.core.environment.KAFKA_SASL_PASSWORD), {})).toThrow(/KAFKA_SASL_PASSWORD is required/);
		} finally {
			fs.rmSync(dataDir, { recursive: true, force: true });
		}
	});
});

describe("k8s manifests", () => {
	const docs = k8sDocs();
	const byKind = (kind: string) => docs.filter(d => d.doc.kind === kind).map(d => d.doc);
	const named = (kind: string, name: string) => byKind(kind).find(d => d.metadata.name === name)!;
	const containerOf = (d: Doc) => d.spec.template.spec.containers[0] as Doc;
	const envOf = (d: Doc, name: string) => (containerOf(d).env as Doc[]).find(e => e.name === name)?.value as string | undefined;
	const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
	/** `  # NAME: value` examples inside the object `kind`/`name` of k8s/<file> (commented out, so not in the parsed object). */
	const commentedKeys = (kind: string, name: string): string[] => {
		const file = docs.find(d => d.doc.kind === kind && d.doc.metadata?.name === name)!.file;
		const chunk = read(`k8s/${file}`)
			.split(/^---$/m)
			.find(c => new RegExp(`^kind: ${kind}$`, "m").test(c) && new RegExp(`^  name: ${name}$`, "m").test(c))!;
		return [...chunk.matchAll(/^ {2}# ([A-Z][A-Z0-9_]*): /gm)].map(m => m[1]);
	};
	/** Every variable a Deployment's pods may be given: its env, and the ConfigMaps' and Secrets' keys and commented examples. */
	const variablesOf = (d: Doc): string[] => {
		const c = containerOf(d);
		const out = (c.env as Doc[]).map(e => e.name as string);
		for (const ref of c.envFrom as Doc[]) {
			const [kind, name] = ref.configMapRef ? ["ConfigMap", ref.configMapRef.name] : ["Secret", ref.secretRef.name];
			const obj = named(kind, name);
			out.push(...Object.keys((kind === "ConfigMap" ? obj.data : obj.stringData) ?? {}), ...commentedKeys(kind, name));
		}
		return out;
	};

	it("parse, and every object names itself and lives in the cryptopay namespace", () => {
		expect(docs.length).toBeGreaterThanOrEqual(20);
		for (const { file, doc } of docs) {
			if (doc.kind === "Kustomization") continue;
			expect([file, typeof doc.apiVersion, typeof doc.metadata?.name]).toEqual([file, "string", "string"]);
			if (doc.kind !== "Namespace") expect([file, doc.metadata.namespace]).toEqual([file, "cryptopay"]);
		}
		expect(byKind("Namespace").map(n => n.metadata.name)).toEqual(["cryptopay"]);
	});

	it("every object passes the Kubernetes API schema of its apiVersion and kind (kubernetes-models)", async () => {
		const objects = docs.filter(d => d.doc.kind !== "Kustomization");
		const errors = await validateK8s(objects.map(d => d.doc));
		expect(objects.map((d, i) => [d.file, d.doc.kind, d.doc.metadata.name, errors[i]])).toEqual(objects.map(d => [d.file, d.doc.kind, d.doc.metadata.name, null]));
		const kinds = objects.map(d => `${d.doc.apiVersion} ${d.doc.kind}`);
		for (const [kind, count] of [["apps/v1 Deployment", 8], ["autoscaling/v2 HorizontalPodAutoscaler", 6], ["policy/v1 PodDisruptionBudget", 8], ["v1 Secret", 3]] as const) {
			expect([kind, kinds.filter(k => k === kind).length]).toEqual([kind, count]);
		}
	});

	it("the schema validation refuses broken manifests (a string port, a missing selector, wrong types, an unknown kind)", async () => {
		const deployment = named("Deployment", "watcher-evm");
		const stringPort = clone(deployment);
		containerOf(stringPort).ports[0].containerPort = "3031";
		const noSelector = clone(deployment);
		delete noSelector.spec.selector;
		const stringProbePort = clone(deployment);
		containerOf(stringProbePort).readinessProbe.httpGet = { path: "/readyz" };
		const hpa = clone(named("HorizontalPodAutoscaler", "watcher-evm"));
		hpa.spec.maxReplicas = "4";
		const pdb = clone(named("PodDisruptionBudget", "watcher-evm"));
		pdb.spec.selector = { matchLabels: { "app.kubernetes.io/component": 1 } };
		const typo = { ...clone(deployment), kind: "Deploymnet" };
		const errors = await validateK8s([deployment, stringPort, noSelector, stringProbePort, hpa, pdb, typo]);
		expect(errors[0]).toBeNull();
		expect(errors[1]).toMatch(/containers\/0\/ports\/0\/containerPort must be integer/);
		expect(errors[2]).toMatch(/data\/spec must have required property selector$/);
		expect(errors[3]).toMatch(/readinessProbe\/httpGet must have required property port$/);
		expect(errors[4]).toMatch(/spec\/maxReplicas must be integer/);
		expect(errors[5]).toMatch(/matchLabels\/app\.kubernetes\.io~1component must be string/);
		expect(errors[6]).toMatch(/no Kubernetes schema for apiVersion "apps\/v1", kind "Deploymnet"/);
	});

	it("the scale-on-lag option patches each watcher HPA to scale on its lag (an External metric) and keeps CPU; the patched HPAs pass the schema", async () => {
		const [k] = parseAllDocuments(read("k8s/scale-on-lag/kustomization.yaml")).map(d => d.toJS() as Doc);
		expect(k.resources).toEqual([".."]);
		expect(k.patches).toEqual([{ path: "hpa-lag.yaml" }]);
		const patches = parseAllDocuments(read("k8s/scale-on-lag/hpa-lag.yaml")).map(d => d.toJS() as Doc);
		const watchers = Object.keys(CHAIN_GROUPS).filter(n => n.startsWith("watcher-"));
		expect(patches.map(p => p.metadata.name).sort()).toEqual(watchers.sort());
		// A strategic merge: HPA metrics is an atomic list, replaced whole.
		const merged = patches.map(p => {
			const base = named("HorizontalPodAutoscaler", p.metadata.name);
			expect([p.apiVersion, p.kind, p.metadata.namespace]).toEqual([base.apiVersion, base.kind, base.metadata.namespace]);
			return { ...clone(base), spec: { ...clone(base.spec), metrics: p.spec.metrics } } as Doc;
		});
		expect(await validateK8s(merged)).toEqual(merged.map(() => null));
		for (const hpa of merged) {
			const name = hpa.metadata.name;
			const external = (hpa.spec.metrics as Doc[]).find(m => m.type === "External")!;
			expect([name, external.external.metric]).toEqual([name, { name: "cryptopay_watcher_lag_max", selector: { matchLabels: { service: name } } }]);
			const cpu = (hpa.spec.metrics as Doc[]).find(m => m.type === "Resource");
			expect([name, cpu]).toEqual([name, (named("HorizontalPodAutoscaler", name).spec.metrics as Doc[]).find(m => m.type === "Resource")]);
		}
	});

	it("kustomization lists exactly the resource files of k8s/, each existing", () => {
		const [k] = byKind("Kustomization");
		expect(k.namespace).toBe("cryptopay");
		const resources = fs.readdirSync(path.join(ROOT, "k8s")).filter(f => /\.ya?ml$/.test(f) && f !== "kustomization.yaml");
		expect([...(k.resources as string[])].sort()).toEqual(resources.sort());
	});

	it("runs the api, core, watcher and sweeper groups with limits, a locked-down container and known services", () => {
		const deployments = byKind("Deployment");
		expect(deployments.map(d => d.metadata.name).sort()).toEqual(["api", "core", "sweeper", "watcher-bitcoin", "watcher-evm", "watcher-polkadot", "watcher-solana", "watcher-ton"]);
		const configMaps = new Set(byKind("ConfigMap").map(c => c.metadata.name));
		const secrets = new Set(byKind("Secret").map(s => s.metadata.name));
		for (const d of deployments) {
			expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
			const c = containerOf(d);
			for (const s of envOf(d, "SERVICES")!.split(",")) expect(availableServices()).toHaveProperty(s);
			expect((c.env as Doc[]).find(e => e.name === "NODE_ID")!.valueFrom).toEqual({ fieldRef: { fieldPath: "metadata.name" } });
			expect(c.resources.requests).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
			expect(c.resources.limits).toEqual(expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }));
			expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
			expect(d.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true });
			for (const ref of c.envFrom as Doc[]) {
				if (ref.configMapRef) expect(configMaps.has(ref.configMapRef.name)).toBe(true);
				if (ref.secretRef) expect(secrets.has(ref.secretRef.name)).toBe(true);
			}
		}
		expect(envOf(named("Deployment", "api"), "SERVICES")).toBe("api,pages");
		expect(envOf(named("Deployment", "core"), "SERVICES")!.split(",")).toEqual(DEPLOYED_CORE_SERVICES);
		for (const [name, services] of Object.entries(CHAIN_GROUPS)) expect([name, envOf(named("Deployment", name), "SERVICES")!.split(",")]).toEqual([name, services]);
		const [service] = byKind("Service");
		expect(service.spec.selector).toEqual(named("Deployment", "api").spec.selector.matchLabels);
	});

	it("probes every node on the port named health: /healthz for start-up and liveness, /readyz for readiness", () => {
		const cm = named("ConfigMap", "gateway-config");
		expect(cm.data.HEALTH_PORT).toBe(String(HEALTH_PORT));
		for (const d of byKind("Deployment")) {
			const c = containerOf(d);
			const name = d.metadata.name;
			const ports = Object.fromEntries((c.ports as Doc[]).map(p => [p.name, p.containerPort]));
			expect([name, ports.health, ports.metrics]).toEqual([name, HEALTH_PORT, Number(cm.data.METRICS_PORT)]);
			for (const probe of ["startupProbe", "livenessProbe"]) expect([name, probe, c[probe].httpGet]).toEqual([name, probe, { path: "/healthz", port: "health" }]);
			expect([name, c.readinessProbe.httpGet]).toEqual([name, { path: "/readyz", port: "health" }]);
			for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) expect([name, probe, c[probe].exec]).toEqual([name, probe, undefined]);
			// Prometheus scrapes the metrics port.
			expect([name, d.spec.template.metadata.annotations]).toEqual([name, { "prometheus.io/scrape": "true", "prometheus.io/port": String(ports.metrics) }]);
		}
	});

	it("gives the chain pods their RPC URLs, the sweeper its wallet and seed, and the other pods neither", () => {
		const secretRefs = (name: string) => (containerOf(named("Deployment", name)).envFrom as Doc[]).flatMap(r => (r.secretRef ? [r.secretRef.name] : []));
		expect(secretRefs("api")).toEqual(["gateway-secrets"]);
		expect(secretRefs("core")).toEqual(["gateway-secrets"]);
		expect(secretRefs("watcher-evm")).toEqual(["gateway-secrets", "gateway-rpc"]);
		expect(secretRefs("watcher-bitcoin")).toEqual(["gateway-secrets", "gateway-rpc"]);
		expect(secretRefs("watcher-solana")).toEqual(["gateway-secrets", "gateway-rpc"]);
		expect(secretRefs("watcher-ton")).toEqual(["gateway-secrets", "gateway-rpc"]);
		expect(secretRefs("watcher-polkadot")).toEqual(["gateway-secrets", "gateway-rpc"]);
		expect(secretRefs("sweeper")).toEqual(["gateway-secrets", "gateway-rpc", "gateway-sweeper"]);
		// The seed the core pods sealed into DATA_DIR, read-only for the sweepers.
		const sweeper = named("Deployment", "sweeper");
		const data = (sweeper.spec.template.spec.volumes as Doc[]).find(v => v.name === "data")!;
		expect(data.persistentVolumeClaim).toEqual({ claimName: "gateway-data", readOnly: true });
		expect((containerOf(sweeper).volumeMounts as Doc[]).find(m => m.name === "data")).toEqual({ name: "data", mountPath: "/data", readOnly: true });
		expect((named("Deployment", "core").spec.template.spec.volumes as Doc[]).find(v => v.name === "data")!.persistentVolumeClaim.claimName).toBe("gateway-data");
		expect(named("PersistentVolumeClaim", "gateway-data").spec.accessModes).toEqual(["ReadWriteMany"]);
	});

	it("gives every pod the time its graceful stop needs; a chain pod's includes a step at its RPC timeout", () => {
		const config = loadConfig({ AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` });
		// broker.stop() first waits for the requests in flight ...
		const shutdownMs = (brokerOptions(config, {}).tracking as { shutdownTimeout: number }).shutdownTimeout;
		for (const d of byKind("Deployment")) {
			const name = d.metadata.name;
			const graceMs = (d.spec.template.spec.terminationGracePeriodSeconds as number) * 1000;
			// ... then a watcher or sweeper waits for its step, whose RPC call may be at its timeout, and releases its leases.
			const needed = name in CHAIN_GROUPS ? shutdownMs + config.watchers.rpcTimeoutMs : shutdownMs;
			expect([name, graceMs > needed]).toEqual([name, true]);
			// The whole stop is bounded by the pod's STOP_TIMEOUT_MS (lib/start.ts), which leaves that
			// time and ends, after any preStop sleep, before the grace period's SIGKILL.
			const container = containerOf(d);
			const stopEnv = ((container.env as Doc[] | undefined) ?? []).find(e => e.name === "STOP_TIMEOUT_MS")?.value as string | undefined;
			const stopMs = loadConfig({ AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}`, STOP_TIMEOUT_MS: stopEnv }).stopTimeoutMs;
			const preStop = container.lifecycle?.preStop?.exec?.command as string[] | undefined;
			const preStopMs = preStop?.[0] === "sleep" ? Number(preStop[1]) * 1000 : 0;
			expect([name, stopMs > needed, preStopMs + stopMs < graceMs]).toEqual([name, true, true]);
		}
	});

	it("scales the watcher and sweeper Deployments with autoscaling/v2 HPAs that target them", () => {
		const hpas = byKind("HorizontalPodAutoscaler");
		expect(hpas.map(h => h.spec.scaleTargetRef.name).sort()).toEqual(Object.keys(CHAIN_GROUPS).sort());
		for (const hpa of hpas) {
			const name = hpa.metadata.name;
			expect([name, hpa.apiVersion, hpa.spec.scaleTargetRef]).toEqual([name, "autoscaling/v2", { apiVersion: "apps/v1", kind: "Deployment", name }]);
			const target = named("Deployment", name);
			expect([name, target?.metadata.name]).toEqual([name, name]);
			// The HPA owns the replica count: a `replicas` in the Deployment would reset it on every apply.
			expect([name, target.spec.replicas]).toEqual([name, undefined]);
			expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
			expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
			// CPU utilization is measured against the container's request.
			for (const m of hpa.spec.metrics as Doc[]) expect(containerOf(target).resources.requests[m.resource.name]).toEqual(expect.any(String));
		}
		// Watchers keep a standby for failover.
		for (const name of ["watcher-evm", "watcher-bitcoin", "watcher-solana", "watcher-ton", "watcher-polkadot"]) expect(named("HorizontalPodAutoscaler", name).spec.minReplicas).toBeGreaterThanOrEqual(2);
	});

	it("protects every Deployment with a PodDisruptionBudget whose selector matches its pods, and only them", () => {
		const deployments = byKind("Deployment");
		const pdbs = byKind("PodDisruptionBudget");
		expect(pdbs.map(p => p.metadata.name).sort()).toEqual(deployments.map(d => d.metadata.name).sort());
		const selects = (pdb: Doc, d: Doc) => Object.entries(pdb.spec.selector.matchLabels as Record<string, string>).every(([k, v]) => d.spec.template.metadata.labels[k] === v);
		for (const pdb of pdbs) {
			const name = pdb.metadata.name;
			expect([name, deployments.filter(d => selects(pdb, d)).map(d => d.metadata.name)]).toEqual([name, [name]]);
			// Drains take one pod at a time (minAvailable 1 on the two-replica groups, maxUnavailable 1 under an HPA).
			expect([name, pdb.spec.maxUnavailable ?? pdb.spec.minAvailable]).toEqual([name, 1]);
		}
	});

	it("ConfigMap + Secrets make a configuration the code accepts once the placeholders are replaced, and not before", () => {
		const cm = named("ConfigMap", "gateway-config");
		const secret = named("Secret", "gateway-secrets");
		const sweeper = named("Secret", "gateway-sweeper");
		const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-k8s-"));
		try {
			const base: Env = { ...cm.data, ...secret.stringData, DATA_DIR: dataDir, SERVICES: "api,pages" };
			// Shipped placeholders are refused in production: a forgotten secret stops the node.
			expect(() => loadConfig(base)).toThrow(/at least 32 characters/);
			const env: Env = { ...base, AUTH_JWT_SECRET: SAMPLE_SECRET, AUTH_REFRESH_SECRET: `r${SAMPLE_SECRET}`, MASTER_KEY: `m${SAMPLE_SECRET}` };
			const config = loadConfig(env);
			expect(config).toMatchObject({ env: "production", trustProxy: true, metrics: true, cacher: "redis" });
			expect(transporterOption(config, env)).toBeInstanceOf(KafkaJsTransporter);
			// The transporter is a trust boundary: SASL over TLS, no start-up warning about it.
			expect(kafkaOptionsFromEnv(config.transporter!, env)).toMatchObject({ ssl: true, sasl: { mechanism: "scram-sha-512", username: "cryptopay", password: "REPLACE_ME" } });
			expect(transporterWarnings(config, env)).toEqual([]);
			// The sweeper pods: the wallet key's placeholder is refused too.
			expect(() => loadConfig({ ...env, ...sweeper.stringData, SERVICES: "sweeper-evm,sweeper-bitcoin,sweeper-ton,sweeper-solana,sweeper-polkadot" })).toThrow(/SWEEPER_PRIVATE_KEY must be a 32-byte hex private key/);
			expect(() => loadConfig({ ...env, ...sweeper.stringData, SWEEPER_PRIVATE_KEY: SAMPLE_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_SOLANA: SAMPLE_SOLANA_SWEEPER_KEY })).toThrow(/SWEEPER_PRIVATE_KEY_TON must be/);
			// The placeholders are refused, not taken for a key.
			expect(() => loadConfig({ ...env, ...sweeper.stringData, SWEEPER_PRIVATE_KEY: SAMPLE_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_TON: SAMPLE_TON_SWEEPER_KEY })).toThrow(/SWEEPER_PRIVATE_KEY_SOLANA must be a Solana secret key/);
			expect(() => loadConfig({ ...env, ...sweeper.stringData, SWEEPER_PRIVATE_KEY: SAMPLE_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_TON: SAMPLE_TON_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_SOLANA: SAMPLE_SOLANA_SWEEPER_KEY })).toThrow(/SWEEPER_PRIVATE_KEY_POLKADOT must be a BIP-39 mnemonic/);
			expect(loadConfig({ ...env, ...sweeper.stringData, SWEEPER_PRIVATE_KEY: SAMPLE_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_TON: SAMPLE_TON_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_SOLANA: SAMPLE_SOLANA_SWEEPER_KEY, SWEEPER_PRIVATE_KEY_POLKADOT: SAMPLE_POLKADOT_SWEEPER_KEY }).sweeper).toMatchObject({ privateKey: SAMPLE_SWEEPER_KEY, tonPrivateKey: SAMPLE_TON_SWEEPER_KEY, solanaPrivateKey: SAMPLE_SOLANA_SWEEPER_KEY, polkadotPrivateKey: SAMPLE_POLKADOT_SWEEPER_KEY });
			// The watcher pods' readiness bound, set on them (it acts there only).
			for (const name of ["watcher-evm", "watcher-bitcoin", "watcher-solana", "watcher-ton", "watcher-polkadot"]) {
				const lag = envOf(named("Deployment", name), "WATCHER_READY_MAX_LAG");
				expect([name, loadConfig({ ...env, WATCHER_READY_MAX_LAG: lag }).watchers.readyMaxLag]).toEqual([name, Number(lag)]);
				expect([name, Number(lag) > 0]).toEqual([name, true]);
			}
		} finally {
			fs.rmSync(dataDir, { recursive: true, force: true });
		}
	});

	it("gives each pod only variables it acts on: catalogue settings to the core, watcher and sweeper settings to those pods", () => {
		for (const d of byKind("Deployment")) {
			const name = d.metadata.name;
			expect([name, notActedOn(variablesOf(d), envOf(d, "SERVICES")!.split(","))]).toEqual([name, []]);
		}
		// The catalogue settings have a place: ConfigMap gateway-catalogue, read by the core pods only.
		const readers = byKind("Deployment").filter(d => (containerOf(d).envFrom as Doc[]).some(r => r.configMapRef?.name === "gateway-catalogue"));
		expect(readers.map(d => d.metadata.name)).toEqual(["core"]);
		const examples = commentedKeys("ConfigMap", "gateway-catalogue");
		expect(examples.length).toBeGreaterThan(0);
		for (const name of examples) expect([name, networkOfConfirmationsVariable(name)?.slug]).toEqual([name, expect.any(String)]);
		expect(named("ConfigMap", "gateway-catalogue").data ?? {}).toEqual({});
		// What the shared ConfigMap holds acts on every pod.
		const shared = Object.keys(named("ConfigMap", "gateway-config").data);
		for (const d of byKind("Deployment")) expect([d.metadata.name, notActedOn(shared, envOf(d, "SERVICES")!.split(","))]).toEqual([d.metadata.name, []]);
	});

	it("the RPC Secret ships no URL, only commented examples of networks the catalogue has", () => {
		expect(named("Secret", "gateway-rpc").stringData ?? {}).toEqual({});
		const examples = [...read("k8s/secret.yaml").matchAll(/^ {2}# (RPC_URL_[A-Z0-9_]+): /gm)].map(m => m[1]);
		expect(examples.length).toBeGreaterThanOrEqual(2);
		for (const name of examples) expect([name, networkOfRpcVariable(name)?.slug]).toEqual([name, expect.any(String)]);
	});
});

/** One scrape of `/metrics` (Prometheus' text format): each series' name, labels and value; each metric's TYPE. */
function scrapeText(text: string): { samples: Array<{ name: string; labels: Record<string, string>; value: number }>; types: Map<string, string> } {
	const samples = [];
	const types = new Map<string, string>();
	for (const line of text.split("\n")) {
		const type = /^# TYPE (\S+) (\S+)$/.exec(line);
		if (type) types.set(type[1], type[2]);
		const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
		if (m) samples.push({ name: m[1], labels: Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(l => [l[1], l[2]])), value: Number(m[3]) });
	}
	return { samples, types };
}

type Matcher = { label: string; op: "=" | "!=" | "=~" | "!~"; value: string };

/** A PromQL instant vector selector `name{label op "value", ...}`: the only form the adapter rule uses; anything else is refused. */
function parseSelector(text: string): { name: string; matchers: Matcher[] } {
	const m = /^\s*([a-zA-Z_:][\w:]*)\s*(?:\{(.*)\})?\s*$/.exec(text);
	if (!m) throw new Error(`not a selector: ${text}`);
	const matchers = (m[2] ?? "")
		.split(",")
		.filter(part => part.trim() !== "")
		.map(part => {
			const mm = /^\s*([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$/.exec(part);
			if (!mm) throw new Error(`not a label matcher: ${part} (in ${text})`);
			return { label: mm[1], op: mm[2] as Matcher["op"], value: mm[3] };
		});
	return { name: m[1], matchers };
}

/** Whether a series' labels pass the matchers (a missing label is the empty string, as in PromQL; regexes anchored). */
function matches(labels: Record<string, string>, matchers: Matcher[]): boolean {
	return matchers.every(({ label, op, value }) => {
		const v = labels[label] ?? "";
		if (op === "=") return v === value;
		if (op === "!=") return v !== value;
		const re = new RegExp(`^(?:${value})$`);
		return op === "=~" ? re.test(v) : !re.test(v);
	});
}

/**
 * The Prometheus adapter's External metric rule (k8s/scale-on-lag/prometheus-adapter-rules.yaml)
 * against what a node really exports: a renamed gauge or label would leave the HPAs without their
 * metric (the adapter serves nothing, the HPA logs a failed metric and keeps its replicas). The
 * rule's queries are parsed here (the selector form and one `aggregation(selector) by (labels)`)
 * and evaluated on a scrape of /metrics, with the adapter's <<.LabelMatchers>> filled in from each
 * HPA's selector the way the adapter does. Not checked here (no Prometheus, adapter or cluster):
 * the scrape config's relabelling (the `kubernetes_namespace` override), the adapter's own
 * template rendering and discovery, and the HPA controller's reading of the External metric.
 */
describe("the scale-on-lag adapter rule against the exported metrics", () => {
	const WATCHERS = Object.keys(CHAIN_GROUPS).filter(n => n.startsWith("watcher-"));
	const [values] = parseAllDocuments(read("k8s/scale-on-lag/prometheus-adapter-rules.yaml")).map(d => d.toJS() as Doc);
	const hpas = parseAllDocuments(read("k8s/scale-on-lag/hpa-lag.yaml")).map(d => d.toJS() as Doc);
	let node: TestNode;
	let scrape: ReturnType<typeof scrapeText>;

	beforeAll(async () => {
		const port = await freePort();
		// Every watcher service (no RPC URL: none leads a network, its gauges are still exported, at 0).
		node = await startNode({ services: ["networks", "transactions", ...WATCHERS], env: { METRICS: "true", METRICS_PORT: String(port) } });
		scrape = await until(
			"every watcher's replica gauges on /metrics",
			async () => {
				const got = scrapeText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
				const series = parseSelector(values.rules.external[0].seriesQuery).name;
				return WATCHERS.every(w => got.samples.some(s => s.name === series && s.labels.service === w)) ? got : null;
			},
			60_000,
		);
	}, 120_000);
	afterAll(() => node?.stop());

	it("has one external rule named as the HPAs' metric, in the docs as in the file", () => {
		expect(values.rules.external).toHaveLength(1);
		const [rule] = values.rules.external as Doc[];
		for (const hpa of hpas) expect((hpa.spec.metrics as Doc[]).find(m => m.type === "External")!.external.metric.name).toBe(rule.name.as);
		// The docs show the same rule (docs/deployment.md "Autoscaling on lag").
		const section = read("docs/deployment.md").split("### Autoscaling on lag")[1];
		const shown = /```yaml\n([\s\S]*?)```/.exec(section)![1];
		expect(parse(shown)).toEqual(values);
	});

	it("selects a series the nodes export (a gauge carrying the labels the HPAs select on)", () => {
		const [rule] = values.rules.external as Doc[];
		const series = parseSelector(rule.seriesQuery);
		// The adapter names the metric from the series name (name.matches, default the whole name) as name.as.
		expect(series.name.replace(new RegExp(rule.name.matches ?? "^(.*)$"), rule.name.as)).toBe(rule.name.as);
		expect(scrape.types.get(series.name)).toBe("gauge");
		const found = scrape.samples.filter(s => s.name === series.name && matches(s.labels, series.matchers));
		expect(found.map(s => s.labels.service).sort()).toEqual(WATCHERS.sort());
		for (const hpa of hpas) {
			const selector = (hpa.spec.metrics as Doc[]).find(m => m.type === "External")!.external.metric.selector;
			// Only matchLabels (the adapter turns them into label matchers), each on a label the series carry.
			expect(Object.keys(selector)).toEqual(["matchLabels"]);
			for (const label of Object.keys(selector.matchLabels)) expect(found.every(s => label in s.labels)).toBe(true);
		}
	});

	it("its metricsQuery, filled in with each HPA's selector, answers one value for that watcher", () => {
		const [rule] = values.rules.external as Doc[];
		const query = /^\s*(max|min|sum|avg)\s*\((.*)\)\s*by\s*\(([^)]*)\)\s*$/.exec(rule.metricsQuery);
		expect(query).not.toBeNull();
		const [, op, inner, by] = query!;
		const groupBy = by.split(",").map(l => l.trim()).filter(Boolean);
		// The selector inside is the series the rule discovers, narrowed by the adapter's label matchers.
		expect(inner).toContain("<<.LabelMatchers>>");
		expect(parseSelector(inner.replace("<<.LabelMatchers>>", "")).name).toBe(parseSelector(rule.seriesQuery).name);
		for (const hpa of hpas) {
			const name = hpa.metadata.name as string;
			const matchLabels = (hpa.spec.metrics as Doc[]).find(m => m.type === "External")!.external.metric.selector.matchLabels as Record<string, string>;
			// What the adapter fills in for an External metric: the HPA's selector as equality matchers.
			const filled = inner.replace("<<.LabelMatchers>>", Object.entries(matchLabels).map(([k, v]) => `${k}="${v}"`).join(","));
			expect(filled).not.toContain("<<");
			const sel = parseSelector(filled);
			const picked = scrape.samples.filter(s => s.name === sel.name && matches(s.labels, sel.matchers));
			const groups = new Map<string, number[]>();
			for (const s of picked) {
				const key = JSON.stringify(groupBy.map(l => s.labels[l] ?? ""));
				groups.set(key, [...(groups.get(key) ?? []), s.value]);
			}
			// One answer per HPA (several, one per replica say, would be added up by the HPA; none: no metric),
			// keeping the labels it selects on.
			expect([name, groups.size]).toEqual([name, 1]);
			expect(groupBy).toEqual(expect.arrayContaining(Object.keys(matchLabels)));
			const [key, vals] = [...groups.entries()][0];
			expect(Object.fromEntries(Object.keys(matchLabels).map(k => [k, (JSON.parse(key) as string[])[groupBy.indexOf(k)]]))).toEqual(matchLabels);
			const value = op === "max" ? Math.max(...vals) : op === "min" ? Math.min(...vals) : op === "sum" ? vals.reduce((a, b) => a + b, 0) : vals.reduce((a, b) => a + b, 0) / vals.length;
			expect(Number.isFinite(value)).toBe(true);
		}
	});
});

describe("the compose health check", () => {
	let server: http.Server;
	let port: number;
	let status = 200;

	beforeAll(async () => {
		// Answers like the health server's /readyz (CONTRACT.md): 200 ready, 503 not ready.
		server = http.createServer((req, res) => {
			res.writeHead(req.url === "/readyz" ? status : 404, { "content-type": "application/json" });
			res.end(JSON.stringify({ status: status === 200 ? "ready" : "not_ready" }));
		});
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		port = (server.address() as AddressInfo).port;
	});
	afterAll(() => new Promise<void>(resolve => server.close(() => resolve())));

	const check = (target: number) => {
		const compose = parse(read("docker-compose.yml"), { merge: true }) as Doc;
		const script = interpolate((compose.services.core.healthcheck.test as string[])[3], {});
		expect(script).toContain(`127.0.0.1:${HEALTH_PORT}/readyz`);
		return runNode(script.replace(`127.0.0.1:${HEALTH_PORT}`, `127.0.0.1:${target}`));
	};

	it("passes while /readyz answers 200, fails on 503 and where nothing listens", async () => {
		status = 200;
		expect(await check(port)).toBe(0);
		status = 503;
		expect(await check(port)).not.toBe(0);
		expect(await check(await freePort())).not.toBe(0);
	});
});
