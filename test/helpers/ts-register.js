/**
 * Lets a child process started by a test run the TypeScript sources directly (`node -r
 * test/helpers/ts-register.js lib/start.ts`), transpiled by the project's own TypeScript, with
 * no type check (the suite's `npm run typecheck` does that). Used where a test must kill -9 a
 * real process.
 */
const fs = require("node:fs");
const ts = require("typescript");

require.extensions[".ts"] = function compileTs(module, filename) {
	const source = fs.readFileSync(filename, "utf8");
	const { outputText } = ts.transpileModule(source, {
		fileName: filename,
		compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, inlineSourceMap: true },
	});
	module._compile(outputText, filename);
};
