/**
 * The package as npm would publish it: sdk/ built with its own tsconfig into a scratch copy, packed
 * (`npm pack --dry-run`: dist and the README, no sources or tests), and loaded by plain Node from
 * CommonJS and from an ES module, with its one dependency.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";

const ROOT = path.join(__dirname, "..", "..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

describe("sdk/ as a package", () => {
	let dir: string;
	beforeAll(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), "sdk-pkg-"));
		fs.copyFileSync(path.join(ROOT, "sdk", "package.json"), path.join(dir, "package.json"));
		fs.copyFileSync(path.join(ROOT, "sdk", "README.md"), path.join(dir, "README.md"));
		execFileSync(process.execPath, [TSC, "-p", path.join(ROOT, "sdk", "tsconfig.json"), "--outDir", path.join(dir, "dist")], { cwd: ROOT, stdio: "pipe" });
		fs.mkdirSync(path.join(dir, "node_modules"));
		fs.symlinkSync(path.join(ROOT, "node_modules", "exponential-backoff"), path.join(dir, "node_modules", "exponential-backoff"));
	}, 120_000);
	afterAll(() => {
		if (dir) fs.rmSync(dir, { recursive: true, force: true });
	});

	it("packs the built files and the README only", () => {
		const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
		const files = (JSON.parse(out)[0].files as Array<{ path: string }>).map(f => f.path);
		expect(files).toEqual(expect.arrayContaining(["package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/generated/openapi.d.ts", "dist/webhooks.js"]));
		expect(files.filter(f => !f.startsWith("dist/") && f !== "package.json" && f !== "README.md")).toEqual([]);
	});

	it("loads from CommonJS and from an ES module", () => {
		const names = ["CryptoPayClient", "verifyWebhook", "CryptoPayApiError", "paginate"];
		const cjs = execFileSync(process.execPath, ["-e", `const sdk = require(${JSON.stringify(dir)}); console.log(JSON.stringify(${JSON.stringify(names)}.map(n => typeof sdk[n])))`], { encoding: "utf8" });
		expect(JSON.parse(cjs)).toEqual(names.map(() => "function"));
		const esm = execFileSync(
			process.execPath,
			["--input-type=module", "-e", `import { ${names.join(", ")} } from ${JSON.stringify(path.join(dir, "dist", "index.js"))}; console.log(JSON.stringify([${names.join(", ")}].map(f => typeof f)))`],
			{ encoding: "utf8" },
		);
		expect(JSON.parse(esm)).toEqual(names.map(() => "function"));
	});
});
