/**
 * Test files that touch no backend: neither they nor anything they import (relative imports,
 * followed transitively) names TEST_BACKEND, Sequelize, a database driver or ioredis. They test
 * the same code on both backends, so the mysql project skips them (jest.config.js): pure logic,
 * codecs and the chain test nodes run once, in the sqlite project.
 *
 * Computed when jest loads its config, so a new file is placed by what it imports, never by a list
 * kept by hand. A file that starts another process which opens a database must import (or name)
 * what it starts, as the cluster tests do through their helpers.
 */
const fs = require("node:fs");
const path = require("node:path");

const BACKEND = /TEST_BACKEND|["']sequelize["']|["']ioredis["']|["']mysql2(\/[^"']*)?["']|["']sqlite3["']/;
const IMPORT = /(?:\bfrom|\bimport|\brequire\(|\bimport\()\s*["'](\.{1,2}\/[^"']+)["']/g;

function resolve(from, spec) {
	const base = path.resolve(path.dirname(from), spec);
	for (const candidate of [base + ".ts", base + ".js", path.join(base, "index.ts"), path.join(base, "index.js"), base]) {
		if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
	}
	return null;
}

/** True when `file` or a file it imports (relatively, transitively) names a backend. */
function touchesBackend(file, seen) {
	if (seen.has(file)) return false;
	seen.add(file);
	const source = fs.readFileSync(file, "utf8");
	if (BACKEND.test(source)) return true;
	for (const match of source.matchAll(IMPORT)) {
		const target = resolve(file, match[1]);
		if (target && touchesBackend(target, seen)) return true;
	}
	return false;
}

function listTests(dir) {
	const out = [];
	for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
		const full = path.join(dir, entry.name);
		if (entry.isDirectory()) out.push(...listTests(full));
		else if (entry.name.endsWith(".test.ts")) out.push(full);
	}
	return out;
}

/** Absolute paths of the test files under `testDir` that touch no backend. */
function backendFreeTests(testDir) {
	return listTests(testDir).filter(file => !touchesBackend(file, new Set()));
}

module.exports = { backendFreeTests, touchesBackend };
