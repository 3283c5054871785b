/**
 * The suite runs twice: on MySQL + Redis and on SQLite + memory (TEST_BACKEND picks per project).
 * `npm run test:sqlite` / `npm run test:mysql` run one of them. Files that touch no backend at all
 * (test/backend-free.js decides from what they import) run in the sqlite project only.
 */
const path = require("node:path");
const { backendFreeTests } = require("./test/backend-free");

const escape = s => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const backendFree = backendFreeTests(path.join(__dirname, "test")).map(file => `^${escape(file)}$`);
const base = {
	preset: "ts-jest",
	testEnvironment: "node",
	testMatch: ["<rootDir>/test/**/*.test.ts"],
	// Type errors are caught by `npm run typecheck`; jest only transpiles.
	transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "<rootDir>/tsconfig.jest.json", diagnostics: false }] },
};
module.exports = {
	testTimeout: 60000,
	// Two test files at a time, also on a 2-core machine (CI), where jest's default (cores - 1) would
	// run them one by one, in band. Files share nothing that a parallel one could disturb: each has its
	// own databases, Redis prefix, DATA_DIR, NATS namespace and free ports (docs/conventions.md "Tests").
	// JEST_MAX_WORKERS (a count or "50%") or `--maxWorkers` sets another number.
	maxWorkers: process.env.JEST_MAX_WORKERS || 2,
	// Counts the responses node.http validated against docs/openapi.json and prints the total.
	globalSetup: "<rootDir>/test/helpers/openapi-count-setup.js",
	globalTeardown: "<rootDir>/test/helpers/openapi-count-teardown.js",
	projects: [
		// Browser tests (*.browser.test.ts) test the page, not the database: they run in the sqlite project only.
		{ ...base, displayName: "mysql", setupFiles: ["<rootDir>/test/helpers/backend-mysql.ts"], testPathIgnorePatterns: ["/node_modules/", "\\.browser\\.test\\.ts$", ...backendFree] },
		{ ...base, displayName: "sqlite", setupFiles: ["<rootDir>/test/helpers/backend-sqlite.ts"] },
	],
};
