/**
 * The README's SDK walk-through compiles against the SDK's types: its TypeScript blocks that import
 * the SDK (the walk-through and the sandbox payment, one module, in order) type-check with strict
 * settings, so a renamed field or path in the document shows up here, not in a merchant's editor.
 */
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const ROOT = path.join(__dirname, "..", "..");

/** The README's ```ts blocks from the one importing the SDK up to the first that is a fragment of another example. */
function walkThroughSource(readme: string, sdkEntry: string): string {
	const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map(m => m[1]);
	const start = blocks.findIndex(b => b.includes('from "cryptopay-gateway-sdk"') && b.includes("new CryptoPayClient"));
	if (start < 0) throw new Error("README has no SDK walk-through");
	const walk = [blocks[start], ...blocks.slice(start + 1).filter(b => /\b(anonymous|merchant)\./.test(b))];
	return `export {};\n${walk.join("\n").replace(/"cryptopay-gateway-sdk"/g, JSON.stringify(sdkEntry))}`;
}

describe("README.md's SDK walk-through", () => {
	it("type-checks against sdk/src", () => {
		const file = path.join(ROOT, "test", "sdk", "__readme-walk-through.ts");
		const source = walkThroughSource(fs.readFileSync(path.join(ROOT, "README.md"), "utf8"), path.join(ROOT, "sdk", "src"));
		const options: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, moduleResolution: ts.ModuleResolutionKind.Bundler, strict: true, noEmit: true, skipLibCheck: true, types: ["node"], lib: ["lib.es2022.d.ts"] };
		const host = ts.createCompilerHost(options);
		const read = host.readFile.bind(host);
		host.readFile = f => (path.resolve(f) === file ? source : read(f));
		const exists = host.fileExists.bind(host);
		host.fileExists = f => path.resolve(f) === file || exists(f);
		const program = ts.createProgram([file], options, host);
		const problems = ts
			.getPreEmitDiagnostics(program)
			.map(d => `${d.file ? `line ${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}: ` : ""}${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
		expect(problems).toEqual([]);
	});
});
