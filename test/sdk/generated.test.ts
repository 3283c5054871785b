/**
 * sdk/src/generated/openapi.ts is what openapi-typescript makes of docs/openapi.json (`npm run
 * sdk:types` regenerates it; `npm run openapi` runs it too), and the client's list of creates that
 * get a generated Idempotency-Key is the document's.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { IDEMPOTENT_CREATES, SDK_VERSION } from "../../sdk/src";

const ROOT = path.join(__dirname, "..", "..");
const GENERATED = path.join(ROOT, "sdk", "src", "generated", "openapi.ts");

describe("sdk/src/generated/openapi.ts", () => {
	it("is generated from docs/openapi.json (run `npm run sdk:types` after `npm run openapi`)", () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sdk-types-"));
		try {
			const out = path.join(dir, "openapi.ts");
			execFileSync(process.execPath, [path.join(ROOT, "sdk", "scripts", "generate-types.js"), out], { cwd: ROOT, stdio: "pipe" });
			expect(fs.readFileSync(GENERATED, "utf8")).toBe(fs.readFileSync(out, "utf8"));
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it("IDEMPOTENT_CREATES are the operations that take Idempotency-Key", () => {
		const doc = JSON.parse(fs.readFileSync(path.join(ROOT, "docs", "openapi.json"), "utf8"));
		const withKey: string[] = [];
		for (const [p, ops] of Object.entries<Record<string, { parameters?: Array<{ $ref?: string }> }>>(doc.paths)) {
			for (const [method, op] of Object.entries(ops)) {
				if (op?.parameters?.some(x => x.$ref === "#/components/parameters/IdempotencyKey")) withKey.push(`${method} ${p.replace(/^\/api\/v1/, "")}`);
			}
		}
		expect(withKey.sort()).toEqual(IDEMPOTENT_CREATES.map(p => `post ${p}`).sort());
	});
});

describe("sdk/package.json", () => {
	it("has the version the client reports in its User-Agent", () => {
		const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "sdk", "package.json"), "utf8"));
		expect(SDK_VERSION).toBe(pkg.version);
		expect(pkg).toMatchObject({ license: "MIT", main: "./dist/index.js", types: "./dist/index.d.ts", dependencies: { "exponential-backoff": expect.any(String) } });
	});
});
