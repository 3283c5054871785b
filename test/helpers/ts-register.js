/**
 * Lets a child process started by a test run the TypeScript sources directly (`node -r
 * test/helpers/ts-register.js lib/start.ts`), transpiled by the project's own TypeScript, with
 * no type check (the suite's `npm run typecheck` does that). Used where a test must kill -9 a
 * real process.
 *
 * Transpiled output is cached on disk by content (the file's path and text, TypeScript's version,
 * the options): every child process would otherwise transpile some 200 files again, seconds of
 * CPU per process start, which on a busy machine ate the bounds of tests that start several
 * processes (docs/conventions.md "Tests"). A changed source is a new key; entries are written whole
 * (a temporary file renamed), so parallel processes never read half of one.
 */
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const ts = require("typescript");

const compilerOptions = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, inlineSourceMap: true };
const CACHE_DIR = path.join(os.tmpdir(), "cpg-ts-register-cache");
const salt = `${ts.version}\0${JSON.stringify(compilerOptions)}`;

function transpile(filename, source) {
	const key = crypto.createHash("sha256").update(salt).update("\0").update(filename).update("\0").update(source).digest("hex");
	const file = path.join(CACHE_DIR, `${key}.js`);
	try {
		return fs.readFileSync(file, "utf8");
	} catch {
		// Not cached yet (or the cache cannot be read): transpile.
	}
	const { outputText } = ts.transpileModule(source, { fileName: filename, compilerOptions });
	try {
		fs.mkdirSync(CACHE_DIR, { recursive: true });
		const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`;
		fs.writeFileSync(tmp, outputText);
		fs.renameSync(tmp, file);
	} catch {
		// A cache that cannot be written only costs the next process the same transpile.
	}
	return outputText;
}

require.extensions[".ts"] = function compileTs(module, filename) {
	module._compile(transpile(filename, fs.readFileSync(filename, "utf8")), filename);
};
