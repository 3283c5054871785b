/**
 * The suite's own rule for waits (docs/testing.md): a test's jest timeout is at least the sum of
 * the bounds of the `until` waits it makes (20 s each unless given). Below it, a busy machine
 * that makes every wait slow, though each within its bound, fails the test on its jest timeout:
 * a flake, and one that names no condition. Read from the sources (TypeScript's parser): each
 * `it`/`test`, its timeout (the third argument, the file's jest.setTimeout, or the config's).
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

/** Each test whose waits' bounds add up to more than its timeout: "file:line: waits N ms > timeout M ms". */
export function tooTightTests(files: string[]): string[] {
	const out: string[] = [];
	for (const file of files) {
		const source = fs.readFileSync(file, "utf8");
		if (!source.includes("until(")) continue;
		const sf = ts.createSourceFile(file, source, ts.ScriptTarget.ES2022, true);
		let fileTimeout = CONFIG_TIMEOUT_MS;
		const setTimeouts = (node: ts.Node) => {
			if (ts.isCallExpression(node) && node.expression.getText(sf) === "jest.setTimeout") fileTimeout = literal(node.arguments[0], sf) ?? fileTimeout;
			ts.forEachChild(node, setTimeouts);
		};
		setTimeouts(sf);
		const visit = (node: ts.Node) => {
			if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && (node.expression.text === "it" || node.expression.text === "test") && node.arguments[1]) {
				const limit = node.arguments[2] ? literal(node.arguments[2], sf) : fileTimeout;
				let waits = 0;
				const untils = (m: ts.Node) => {
					if (ts.isCallExpression(m) && ts.isIdentifier(m.expression) && m.expression.text === "until") waits += m.arguments[2] ? (literal(m.arguments[2], sf) ?? 0) : UNTIL_DEFAULT_MS;
					ts.forEachChild(m, untils);
				};
				untils(node.arguments[1]);
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
});
