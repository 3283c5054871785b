/**
 * Jest global setup and teardown: a fresh folder for the run, where each test file that used
 * node.http writes how many responses it validated against docs/openapi.json
 * (test/helpers/openapi-validate.ts); the teardown prints the total and writes it to
 * <folder>/total.json.
 */
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

async function setup() {
	process.env.OPENAPI_COUNT_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-openapi-validated-"));
}

async function teardown() {
	const dir = process.env.OPENAPI_COUNT_DIR;
	if (!dir || !fs.existsSync(dir)) return;
	let total = 0;
	let skipped = 0;
	let files = 0;
	for (const name of fs.readdirSync(dir)) {
		if (name === "total.json") continue;
		const entry = JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
		total += entry.validated;
		skipped += entry.skipped || 0;
		files++;
	}
	fs.writeFileSync(path.join(dir, "total.json"), JSON.stringify({ validated: total, skippedTestOnlyRoutes: skipped, testFiles: files }));
	console.log(
		`\nOpenAPI: ${total} responses in ${files} test file runs validated against docs/openapi.json; ${skipped} successes of routes that tests added themselves not validated (${path.join(dir, "total.json")})`,
	);
}

module.exports = { setup, teardown };
