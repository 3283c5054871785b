/**
 * The suite's own rule for waits (docs/testing.md): a test's jest timeout is at least the sum of
 * the bounds of the `until` waits it makes (20 s each unless given). Below it, a busy machine
 * that makes every wait slow, though each within its bound, fails the test on its jest timeout:
 * a flake, and one that names no condition. Read from the sources (TypeScript's parser): each
 * `it`/`test`, its timeout (the third argument, the file's jest.setTimeout, or the config's), and
 * its waits: its own `until` calls and those of the helper functions it calls by name (imported
 * from a relative path), followed into what they call in turn. A test file's own functions are not
 * followed (not yet: some tests' own helpers wait longer in all than their timeouts allow).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import ts from "typescript";

const ROOT = path.join(__dirname);
const UNTIL_DEFAULT_MS = 20_000;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const CONFIG_TIMEOUT_MS: number = require("../jest.config.js").testTimeout;

function testFiles(dir: string, out: string[] = []): string[] {
	for (const name of fs.readdirSync(dir)) {
		const p = path.join(dir, name);
		if (fs.statSync(p).isDirectory()) testFiles(p, out);
		else if (p.endsWith(".test.ts")) out.push(p);
	}
	return out;
}

/** A numeric literal (1_000 or 1000), else null (a name, an expression: not judged). */
function literal(node: ts.Node | undefined, sf: ts.SourceFile): number | null {
	if (!node) return null;
	const text = node.getText(sf).replace(/_/g, "");
	return /^\d+$/.test(text) ? Number(text) : null;
}

/** A parsed source file: its functions by name (declared anywhere in it) and what it imports from relative paths. */
interface Scope {
	sf: ts.SourceFile;
	functions: Map<string, ts.Node>;
	imports: Map<string, { file: string; name: string }>;
}

const scopes = new Map<string, Scope | null>();

function resolveImport(from: string, spec: string): string | null {
	const base = path.resolve(path.dirname(from), spec);
	for (const candidate of [base, `${base}.ts`, path.join(base, "index.ts")]) if (candidate.endsWith(".ts") && fs.existsSync(candidate)) return candidate;
	return null;
}

function scopeOf(file: string): Scope | null {
	if (scopes.has(file)) return scopes.get(file)!;
	let scope: Scope | null = null;
	if (fs.existsSync(file)) {
		const sf = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
		scope = { sf, functions: new Map(), imports: new Map() };
		const s = scope;
		const collect = (node: ts.Node) => {
			if (ts.isFunctionDeclaration(node) && node.name && node.body) s.functions.set(node.name.text, node.body);
			if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))) s.functions.set(node.name.text, node.initializer.body);
			if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.moduleSpecifier.text.startsWith(".")) {
				const target = resolveImport(file, node.moduleSpecifier.text);
				const named = node.importClause?.namedBindings;
				if (target && named && ts.isNamedImports(named)) for (const el of named.elements) s.imports.set(el.name.text, { file: target, name: (el.propertyName ?? el.name).text });
			}
			ts.forEachChild(node, collect);
		};
		collect(sf);
	}
	scopes.set(file, scope);
	return scope;
}

/** The function `name` as `scope` sees it: a helper's own, else the one it imports (null: not followed). */
function lookup(scope: Scope, name: string): { scope: Scope; body: ts.Node; key: string } | null {
	const own = scope.sf.fileName.endsWith(".test.ts") ? undefined : scope.functions.get(name);
	if (own) return { scope, body: own, key: `${scope.sf.fileName}#${name}` };
	const imported = scope.imports.get(name);
	const target = imported && scopeOf(imported.file);
	const body = target && target.functions.get(imported.name);
	return body ? { scope: target, body, key: `${target.sf.fileName}#${imported.name}` } : null;
}

/** The sum of the bounds of the `until` waits under `node`, and of the functions it calls (each call counts; a function is not followed into itself). */
function waitsUnder(node: ts.Node, scope: Scope, following: ReadonlySet<string>): number {
	let waits = 0;
	const visit = (m: ts.Node) => {
		if (ts.isCallExpression(m) && ts.isIdentifier(m.expression)) {
			if (m.expression.text === "until") waits += m.arguments[2] ? (literal(m.arguments[2], scope.sf) ?? 0) : UNTIL_DEFAULT_MS;
			else {
				const fn = lookup(scope, m.expression.text);
				if (fn && !following.has(fn.key)) waits += waitsUnder(fn.body, fn.scope, new Set([...following, fn.key]));
			}
		}
		ts.forEachChild(m, visit);
	};
	visit(node);
	return waits;
}

/** Each test whose waits' bounds add up to more than its timeout: "file:line: waits N ms > timeout M ms". */
export function tooTightTests(files: string[]): string[] {
	const out: string[] = [];
	for (const file of files) {
		const scope = scopeOf(file);
		if (!scope) continue;
		const { sf } = scope;
		let fileTimeout = CONFIG_TIMEOUT_MS;
		const setTimeouts = (node: ts.Node) => {
			if (ts.isCallExpression(node) && node.expression.getText(sf) === "jest.setTimeout") fileTimeout = literal(node.arguments[0], sf) ?? fileTimeout;
			ts.forEachChild(node, setTimeouts);
		};
		setTimeouts(sf);
		const visit = (node: ts.Node) => {
			if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && (node.expression.text === "it" || node.expression.text === "test") && node.arguments[1]) {
				const limit = node.arguments[2] ? literal(node.arguments[2], sf) : fileTimeout;
				const waits = waitsUnder(node.arguments[1], scope, new Set());
				const line = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
				if (limit !== null && waits > limit) out.push(`${path.relative(path.dirname(ROOT), file)}:${line}: waits ${waits} ms > timeout ${limit} ms`);
			}
			ts.forEachChild(node, visit);
		};
		visit(sf);
	}
	return out;
}

describe("test bounds", () => {
	it("no test's jest timeout is below the sum of its waits' bounds", () => {
		const files = testFiles(ROOT);
		expect(files.length).toBeGreaterThan(100);
		expect(tooTightTests(files)).toEqual([]);
	});

	it("finds a test whose waits add up to more than its timeout (the check checks)", () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bounds-"));
		const file = path.join(dir, "x.test.ts");
		fs.writeFileSync(file, `it("a", async () => { await until("b", f); await until("c", f, 50_000); }, 60_000);\nit("d", async () => { await until("e", f); }, 30_000);\n`);
		try {
			expect(tooTightTests([file]).map(s => s.replace(/^.*x\.test\.ts/, "x.test.ts"))).toEqual(["x.test.ts:1: waits 70000 ms > timeout 60000 ms"]);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it("counts the waits of the helper functions a test calls, and of what they call", () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bounds-"));
		const file = path.join(dir, "x.test.ts");
		fs.writeFileSync(path.join(dir, "steps.ts"), `export async function twice() { await once(); await once(); }\nconst once = () => until("b", f, 30_000);\n`);
		fs.writeFileSync(file, `import { twice as both } from "./steps";\nit("a", async () => { await both(); await until("c", f); }, 60_000);\nit("d", async () => { await both(); }, 60_000);\n`);
		try {
			expect(tooTightTests([file]).map(s => s.replace(/^.*x\.test\.ts/, "x.test.ts"))).toEqual(["x.test.ts:2: waits 80000 ms > timeout 60000 ms"]);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
});
