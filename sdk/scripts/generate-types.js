#!/usr/bin/env node
/**
 * `npm run sdk:types` (from the repository root): sdk/src/generated/openapi.ts from
 * docs/openapi.json with openapi-typescript (a devDependency of the root). An argument writes
 * elsewhere (the test compares the committed file with a fresh one).
 */
const { execFileSync } = require("node:child_process");
const path = require("node:path");

const root = path.join(__dirname, "..", "..");
const out = process.argv[2] || path.join(root, "sdk", "src", "generated", "openapi.ts");
const cli = path.join(root, "node_modules", "openapi-typescript", "bin", "cli.js");
execFileSync(process.execPath, [cli, path.join(root, "docs", "openapi.json"), "--empty-objects-unknown", "--output", out], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
