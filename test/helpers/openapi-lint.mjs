/**
 * Validates an OpenAPI document against the OpenAPI schema of its version with
 * @seriousme/openapi-schema-validator (ESM-only, which jest's CommonJS runtime cannot load, so the
 * tests run this script with Node: test/lib/openapi/document.test.ts).
 *
 * argv[2]: the document's path. stdout: `{ valid, version, errors }` as JSON.
 */
import fs from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";

const validator = new Validator();
const result = await validator.validate(JSON.parse(fs.readFileSync(process.argv[2], "utf8")));
process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors ?? null }));
