/**
 * The start-up preflight (lib/preflight.ts): the Node version and the native modules, loaded in a
 * real child process. The end-to-end case runs lib/start.ts with a Node that cannot load this
 * node_modules' sqlite3 (/usr/bin/node, v20, where the machine has one): one message naming the
 * fix and exit status 1, not a segfault.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { MIN_NODE, NATIVE_MODULES, NODE22_INSTALL, nativeModulesProblem, nodeMajor, nodeVersionNotice, nodeVersionProblem, preflightProblem } from "../../lib/preflight";

const ROOT = path.resolve(__dirname, "../..");

describe("Node version", () => {
	it("reads the major version", () => {
		expect(nodeMajor("v20.20.2")).toBe(20);
		expect(nodeMajor("22.23.3")).toBe(22);
		expect(nodeMajor("garbage")).toBe(0);
	});

	it("accepts the minimum (20.19: a fresh machine's system Node) and newer, refuses older with the Node to use and how to get it", () => {
		expect(nodeVersionProblem("v20.19.0", "/x/node")).toBeNull();
		expect(nodeVersionProblem("v20.20.2", "/usr/bin/node")).toBeNull();
		expect(nodeVersionProblem("v22.0.0", "/x/node")).toBeNull();
		expect(nodeVersionProblem("v24.1.0", "/x/node")).toBeNull();
		for (const old of ["v20.18.3", "v18.20.4", "v16.0.0"]) {
			const msg = nodeVersionProblem(old, "/usr/bin/node")!;
			expect(msg).toContain(`Node.js ${old} (/usr/bin/node) is too old`);
			expect(msg).toContain(`needs Node.js ${MIN_NODE.major}.${MIN_NODE.minor} or newer`);
			expect(msg).toContain(NODE22_INSTALL);
		}
	});

	it("notes a supported Node older than the recommended 22 in one line, and says nothing on 22", () => {
		expect(nodeVersionNotice("v20.20.2")).toMatch(/^Note: running on Node\.js v20\.20\.2; it works, but Moleculer 0\.15 declares Node\.js 22/);
		expect(nodeVersionNotice("v22.23.3")).toBeNull();
		expect(nodeVersionNotice("v24.0.0")).toBeNull();
	});

	it("agrees with package.json engines and the README's install line", () => {
		const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
		expect(pkg.engines.node).toBe(`>=${MIN_NODE.major}.${MIN_NODE.minor}`);
		expect(fs.readFileSync(path.join(ROOT, "README.md"), "utf8")).toContain(NODE22_INSTALL);
	});
});

describe("native modules, loaded in a child process", () => {
	let dir: string;
	beforeAll(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-preflight-"));
		fs.writeFileSync(path.join(dir, "fine.js"), "module.exports = 1;");
		// What Node says about an addon built for another ABI.
		fs.writeFileSync(path.join(dir, "wrong-abi.js"), 'throw new Error("The module was compiled against a different Node.js version using\\nNODE_MODULE_VERSION 127.");');
		// What a crashing addon does to the process.
		fs.writeFileSync(path.join(dir, "crash.js"), 'process.kill(process.pid, "SIGSEGV");');
		fs.writeFileSync(path.join(dir, "hang.js"), "for (;;) {}");
	});
	afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
	const mod = (name: string) => path.join(dir, name);

	it("passes when this Node loads the project's native modules", () => {
		expect(nativeModulesProblem()).toBeNull();
		expect(NATIVE_MODULES).toEqual(["sqlite3", "bcrypt"]);
		expect(preflightProblem()).toBeNull();
	});

	it("names the module that threw, with the loader's first line", () => {
		const failure = nativeModulesProblem({ modules: [mod("fine.js"), mod("wrong-abi.js")] });
		expect(failure).toEqual({ module: mod("wrong-abi.js"), reason: "it failed to load: The module was compiled against a different Node.js version using" });
	});

	it("names the module that crashed the process", () => {
		expect(nativeModulesProblem({ modules: [mod("fine.js"), mod("crash.js"), mod("wrong-abi.js")] })).toEqual({ module: mod("crash.js"), reason: "it crashed the process (SIGSEGV)" });
	});

	it("gives up on a module that hangs", () => {
		const started = Date.now();
		expect(nativeModulesProblem({ modules: [mod("hang.js")], timeoutMs: 500 })).toEqual({ module: mod("hang.js"), reason: "loading it did not finish within 0.5 s" });
		// Generous: it only says the call gave up instead of hanging (a loaded machine is slow, not wrong).
		expect(Date.now() - started).toBeLessThan(20_000);
	});

	it("says a module that is not installed", () => {
		expect(nativeModulesProblem({ modules: ["no-such-module-cpg"] })).toEqual({ module: "no-such-module-cpg", reason: "it is not installed (run `npm ci`)" });
	});

	it("on a supported Node, the message names npm rebuild and the Node the modules were built for", () => {
		const msg = preflightProblem({ version: "v22.9.0", modules: [mod("crash.js")] })!;
		expect(msg).toContain(`The native module "${mod("crash.js")}" does not load in this Node.js (v22.9.0, ${process.execPath}): it crashed the process (SIGSEGV).`);
		expect(msg).toContain("npm rebuild");
		expect(msg).toContain("start with the Node.js that ran `npm ci`");
	});
});

/** A Node on this machine that crashes on (or refuses) this node_modules' sqlite3, if any. */
function incompatibleNode(): { path: string; version: string } | null {
	const candidate = "/usr/bin/node";
	if (!fs.existsSync(candidate) || fs.realpathSync(candidate) === fs.realpathSync(process.execPath)) return null;
	const run = spawnSync(candidate, ["-e", `require(${JSON.stringify(require.resolve("sqlite3"))})`], { timeout: 15_000 });
	if (run.status === 0) return null;
	const version = spawnSync(candidate, ["--version"], { encoding: "utf8" }).stdout.trim();
	return { path: candidate, version };
}

const other = incompatibleNode();
if (!other) console.warn("preflight against another Node: skipped (no /usr/bin/node here that fails to load this node_modules' sqlite3)");
const withOtherNode = other ? describe : describe.skip;

withOtherNode("with a Node that cannot load this node_modules' sqlite3", () => {
	it("the check reports the crash instead of dying of it", () => {
		const failure = nativeModulesProblem({ execPath: other!.path });
		expect(failure?.module).toBe("sqlite3");
		expect(failure?.reason).toMatch(/^it crashed the process \(SIG[A-Z]+\)$|^it failed to load: /);
	});

	it("lib/start.ts run with it exits 1 with one message naming the fix, and starts nothing", () => {
		const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-preflight-start-"));
		try {
			const run = spawnSync(other!.path, ["-r", path.join(ROOT, "test/helpers/ts-register.js"), path.join(ROOT, "lib/start.ts")], {
				cwd: dataDir,
				encoding: "utf8",
				timeout: 60_000,
				env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir, PORT: "0", HEALTH_PORT: "0" },
			});
			expect({ status: run.status, signal: run.signal }).toEqual({ status: 1, signal: null });
			expect(run.stdout).toBe("");
			const tooOld = nodeVersionProblem(other!.version, other!.path) !== null;
			if (tooOld) {
				expect(run.stderr).toContain(`Node.js ${other!.version} (${other!.path}) is too old`);
				expect(run.stderr).toContain(NODE22_INSTALL);
				expect(run.stderr).toMatch(/The native module "sqlite3" does not load in this Node either: it (crashed the process \(SIG[A-Z]+\)|failed to load)/);
			} else {
				expect(run.stderr).toContain('The native module "sqlite3" does not load in this Node.js');
				expect(run.stderr).toContain("npm rebuild");
			}
			expect(run.stderr.startsWith("Cannot start the gateway.\n")).toBe(true);
			// Nothing was started: no database file, no secrets generated.
			expect(fs.readdirSync(dataDir)).toEqual([]);
		} finally {
			fs.rmSync(dataDir, { recursive: true, force: true });
		}
	});
});
