/** `.env` editing for the dev chain script: update in place, append, keep everything else. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { setEnvValues, updateEnvFile } from "../../../lib/dev/env-file";

describe("setEnvValues", () => {
	it("replaces existing keys where they stand and appends missing ones, keeping other lines", () => {
		const before = "# gateway\nPORT=3000\nTEST_USDC_ADDRESS=0xold\n\nexport RPC_URL_ETHEREUM=https://eth.example\n";
		expect(setEnvValues(before, { TEST_USDC_ADDRESS: "0xNEW", RPC_URL_ANVIL_LOCAL: "http://127.0.0.1:8545" })).toBe(
			"# gateway\nPORT=3000\nTEST_USDC_ADDRESS=0xNEW\n\nexport RPC_URL_ETHEREUM=https://eth.example\nRPC_URL_ANVIL_LOCAL=http://127.0.0.1:8545\n",
		);
	});

	it("handles an empty file, a missing final newline, CRLF, `export`, spaces and later duplicates", () => {
		expect(setEnvValues("", { A: "1" })).toBe("A=1\n");
		expect(setEnvValues("B=2", { A: "1" })).toBe("B=2\nA=1\n");
		expect(setEnvValues("B=2\r\nA = 0\r\n", { A: "1" })).toBe("B=2\nA=1\n");
		expect(setEnvValues("export A=0\nA=5\n", { A: "1" })).toBe("A=1\n");
		// A key that only starts like another is a different key.
		expect(setEnvValues("AB=2\n#A=3\n", { A: "1" })).toBe("AB=2\n#A=3\nA=1\n");
	});

	it("refuses names and values that would break the file", () => {
		expect(() => setEnvValues("", { "A B": "1" })).toThrow(/name/);
		expect(() => setEnvValues("", { A: "1\nB=2" })).toThrow(/lines/);
	});
});

describe("updateEnvFile", () => {
	it("creates the file, then updates it", () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-envfile-"));
		try {
			const file = path.join(dir, ".env");
			updateEnvFile(file, { A: "1" });
			fs.appendFileSync(file, "KEEP=me\n");
			updateEnvFile(file, { A: "2", B: "3" });
			expect(fs.readFileSync(file, "utf8")).toBe("A=2\nKEEP=me\nB=3\n");
			expect(fs.readdirSync(dir)).toEqual([".env"]);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
});
