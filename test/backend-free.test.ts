/**
 * test/backend-free.js: which test files the mysql project skips because they touch no backend.
 */
import path from "node:path";
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { backendFreeTests, touchesBackend } = require("./backend-free") as {
	backendFreeTests(dir: string): string[];
	touchesBackend(file: string, seen: Set<string>): boolean;
};

const at = (rel: string) => path.join(__dirname, rel);

describe("backend-free test files", () => {
	it("a pure logic test touches no backend; one that imports a service (and so the models) does", () => {
		expect(touchesBackend(at("lib/crypto.test.ts"), new Set())).toBe(false);
		expect(touchesBackend(at("lib/chains/codecs.test.ts"), new Set())).toBe(false);
		// Through its imports: services → models → Sequelize.
		expect(touchesBackend(at("services/users.test.ts"), new Set())).toBe(true);
		// By name: the file reads TEST_BACKEND itself.
		expect(touchesBackend(at("lib/kafkajs-transporter.mock.test.ts"), new Set())).toBe(true);
	});

	it("lists only files that exist, and none that reaches a backend through a helper", () => {
		const free = backendFreeTests(__dirname);
		expect(free.length).toBeGreaterThan(10);
		expect(free).toContain(at("lib/crypto.test.ts"));
		expect(free).not.toContain(at("services/users.test.ts"));
		expect(free.some(f => f.includes(`${path.sep}cluster${path.sep}`))).toBe(false);
		for (const f of free) expect(touchesBackend(f, new Set())).toBe(false);
	});
});
