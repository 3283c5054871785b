/**
 * `npm run repl` (`node dist/lib/repl.js`): the support staff's console (docs/operations.md).
 * - With TRANSPORTER set (from the environment or `.env`, read by lib/config.ts): a REPL-only
 *   node joins the running cluster (same TRANSPORTER and NAMESPACE). It runs no service and
 *   opens no database, Redis, metrics or HTTP port; every command calls the cluster's services.
 *   Its node id is `repl-<host>-<pid>`, never NODE_ID (in a pod that is the pod's own node's id).
 * - Without TRANSPORTER: the embedded node of `npm start` (every service, SQLite in DATA_DIR,
 *   the gateway on PORT) with the REPL on top, instead of `npm start`, not beside it.
 * Both add the support commands of lib/support/commands.ts to moleculer-repl's own.
 */
import fs from "node:fs";
import os from "node:os";
import type { REPLServer } from "node:repl";
import type { BrokerOptions, ServiceBroker } from "moleculer";
import { brokerOptions } from "../moleculer.config";
import { AppConfig, Env, loadConfig, processEnvironment } from "./config";
import { createNode, NodeBroker } from "./node";
import { runSupportCommand, SUPPORT_COMMANDS } from "./support/commands";

/** Services the support commands call; the REPL says when they are not (yet) in the cluster. */
const NEEDED_SERVICES = ["intents", "links", "transactions", "webhooks", "organizations", "networks"];
const DISCOVERY_WAIT_MS = 10_000;

export interface ReplNodeOptions {
	config: AppConfig;
	env: Env;
	nodeID?: string;
}

/** The REPL-only node: the cluster's transporter and namespace, nothing else. */
export function createReplNode(opts: ReplNodeOptions): ServiceBroker {
	if (!opts.config.transporter) throw new Error("Configuration: a REPL-only node needs TRANSPORTER (without it, the REPL runs the embedded node)");
	const base = brokerOptions(opts.config, opts.env, null);
	const options: BrokerOptions = {
		...base,
		nodeID: opts.nodeID ?? `repl-${os.hostname()}-${process.pid}`,
		// No cache, metrics or tracing: in a pod, the node beside it already serves METRICS_PORT.
		cacher: undefined,
		metrics: { enabled: false },
		tracing: { enabled: false },
		// The prompt stays readable: connection trouble (warn) still shows.
		logger: { type: "Console", options: { level: "warn", colors: process.stdout.isTTY, formatter: "short" } },
		logLevel: "warn",
	};
	return new NodeBroker(options);
}

/** One line a command prints: its answer, whatever happened (runSupportCommand never throws). */
export type Print = (text: string) => void;

interface MoleculerReplCommand {
	command: string;
	description: string;
	allowUnknownOptions: boolean;
	parse(this: unknown, cmd: { args: string[]; params?: unknown }): void;
	action(broker: ServiceBroker, params: { words: string[] }): Promise<void>;
}

/**
 * The support commands as moleculer-repl custom commands. Every word after the name reaches the
 * command as it was typed (unknown options allowed: the command checks them and answers a
 * sentence; commander's own errors would print a stack trace).
 */
export function supportReplCommands(print: Print = text => console.log(text)): MoleculerReplCommand[] {
	return SUPPORT_COMMANDS.map(c => ({
		command: `${c.name} [words...]`,
		description: `${c.description}. Usage: ${c.usage}`,
		allowUnknownOptions: true,
		parse(cmd) {
			cmd.params = { words: [...cmd.args] };
		},
		async action(broker, params) {
			print(await runSupportCommand(() => c.run(broker, params.words)));
		},
	}));
}

/** Opens the REPL on the broker with the support commands (the prompt says which node it is). */
export function openRepl(broker: ServiceBroker, print?: Print): REPLServer {
	broker.options.replOptions = {
		delimiter: `support@${broker.nodeID} $`,
		customCommands: supportReplCommands(print) as unknown as NonNullable<BrokerOptions["replOptions"]>["customCommands"],
	};
	// moleculer-repl returns Node's REPL server (Moleculer's typings say void).
	return broker.repl() as unknown as REPLServer;
}

/** The transporter as the start-up line names it: scheme, host and port, no credentials. */
function transporterShown(url: string): string {
	if (url === "tcp" || url.startsWith("tcp://")) return "TCP (TCP_URLS)";
	try {
		const u = new URL(url);
		return `${u.protocol}//${u.host}`;
	} catch {
		return "the configured TRANSPORTER";
	}
}

/** moleculer-repl keeps its history in $HOME; where that is read-only (the pods' root file system), in the temp folder. */
function writableHome(): void {
	try {
		fs.accessSync(os.homedir(), fs.constants.W_OK);
	} catch {
		process.env.HOME = os.tmpdir();
	}
}

async function main(): Promise<void> {
	const env = processEnvironment();
	const config = loadConfig(env);
	let broker: ServiceBroker;
	if (config.transporter) {
		broker = createReplNode({ config, env });
		const at = transporterShown(config.transporter);
		console.log(`Joining the cluster at ${at} (namespace "${env.NAMESPACE || ""}") as ${broker.nodeID}, a REPL-only node...`);
		await broker.start();
		const missing = await broker
			.waitForServices(NEEDED_SERVICES, DISCOVERY_WAIT_MS, 200)
			.then(() => [] as string[])
			.catch(() => {
				const seen = new Set(broker.registry.getServiceList({ onlyAvailable: true }).map(s => s.name));
				return NEEDED_SERVICES.filter(s => !seen.has(s));
			});
		if (missing.length) console.log(`Not seen in the cluster yet: ${missing.join(", ")}. Commands that need them say so until they join.`);
	} else {
		console.log("No TRANSPORTER: starting the embedded node (every service, as npm start) with the REPL.");
		broker = await createNode({ config, env });
		await broker.start();
	}
	console.log('Support commands: intent, link, tx, watchers, webhooks, outbox ("help" lists every command; "quit" leaves).');
	writableHome();
	openRepl(broker);
}

if (require.main === module) {
	main().catch(err => {
		console.error(`Failed to start the REPL: ${err instanceof Error ? err.message : String(err)}`);
		process.exit(1);
	});
}
