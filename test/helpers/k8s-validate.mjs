/**
 * Validates Kubernetes objects against the API's OpenAPI schemas with the `kubernetes-models`
 * package (its precompiled validators). The package is ESM-only, which jest's CommonJS runtime
 * cannot load, so the tests run this script with Node (test/cluster/deployment-files.test.ts).
 *
 * stdin: a JSON array of objects. stdout: a JSON array, per object `null` (valid) or the
 * validation error's message. An apiVersion/kind the package has no schema for is an error too.
 */
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const objects = JSON.parse(Buffer.concat(chunks).toString("utf8"));

/** `apps/v1` -> kubernetes-models/apps/v1; the core group `v1` -> kubernetes-models/v1. */
async function modelClass(apiVersion, kind) {
	if (typeof apiVersion !== "string" || typeof kind !== "string" || !/^[a-z0-9.]+(\/[a-z0-9]+)?$/.test(apiVersion)) return null;
	try {
		const groupVersion = await import(`kubernetes-models/${apiVersion}`);
		return typeof groupVersion[kind] === "function" ? groupVersion[kind] : null;
	} catch {
		return null;
	}
}

const results = [];
for (const object of objects) {
	const Model = await modelClass(object?.apiVersion, object?.kind);
	if (!Model) {
		results.push(`no Kubernetes schema for apiVersion ${JSON.stringify(object?.apiVersion)}, kind ${JSON.stringify(object?.kind)}`);
		continue;
	}
	try {
		new Model(object).validate();
		results.push(null);
	} catch (err) {
		results.push(err instanceof Error ? err.message : String(err));
	}
}
process.stdout.write(JSON.stringify(results));
