/**
 * Command-line options of the npm scripts (`npm run dev:chain`, `pay`, `sweep:deploy`), pure:
 * `--name value`, `--name=value` and flags, anywhere among the positional arguments; `--` ends
 * the options. Every error is an Error whose message is for the person at the terminal.
 */

/** Each option the script takes: a flag, or an option with a value. */
export type OptionSpec = Record<string, "flag" | "value">;

export interface CliArgs {
	/** By option name (without the dashes): the value, or true for a flag given. */
	options: Record<string, string | true>;
	positionals: string[];
}

export function parseCliArgs(args: readonly string[], spec: OptionSpec, usage: string): CliArgs {
	const options: CliArgs["options"] = {};
	const positionals: string[] = [];
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--") {
			positionals.push(...args.slice(i + 1));
			break;
		}
		if (!arg.startsWith("--")) {
			positionals.push(arg);
			continue;
		}
		const eq = arg.indexOf("=");
		const name = arg.slice(2, eq < 0 ? undefined : eq);
		const kind = spec[name];
		if (!kind) throw new Error(`Unknown option --${name}\n${usage}`);
		if (name in options) throw new Error(`--${name} is given twice`);
		if (kind === "flag") {
			if (eq >= 0) throw new Error(`--${name} takes no value`);
			options[name] = true;
			continue;
		}
		const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
		if (value === undefined || value === "" || (eq < 0 && value.startsWith("--"))) throw new Error(`--${name} needs a value\n${usage}`);
		options[name] = value;
	}
	return { options, positionals };
}

/** A TCP port, 1 to 65535. */
export function parsePort(raw: string, what: string): number {
	const port = /^\d{1,5}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
	if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new Error(`${what} must be a port number from 1 to 65535, got "${raw}"`);
	return port;
}

/** A URL of one of `protocols` (not echoed when it does not parse: an RPC URL may carry a key). */
function parseUrlOf(raw: string, what: string, protocols: readonly string[], kind: string, over: string, example: string): string {
	const value = raw.trim();
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new Error(`${what} must be ${kind} URL like ${example} (the value given is not a URL)`);
	}
	if (!protocols.includes(url.protocol)) throw new Error(`${what} must be ${kind} URL (JSON-RPC over ${over}), got a ${url.protocol} URL`);
	return value;
}

/** An http(s) JSON-RPC URL (the scripts speak JSON-RPC over HTTP). */
export function parseHttpUrl(raw: string, what: string): string {
	return parseUrlOf(raw, what, ["http:", "https:"], "an http(s)", "HTTP", "http://127.0.0.1:8545");
}

/** A ws(s) JSON-RPC URL (Substrate nodes: JSON-RPC over a WebSocket). */
export function parseWsUrl(raw: string, what: string): string {
	return parseUrlOf(raw, what, ["ws:", "wss:"], "a ws(s)", "a WebSocket", "ws://127.0.0.1:9944");
}
