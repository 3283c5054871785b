import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { redactUrl, rpcUrlFor, watchersConfigFromEnv } from "../../../lib/watchers/config";

describe("watcher configuration", () => {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-cookie-"));
	const cookie = path.join(dir, ".cookie");
	fs.writeFileSync(cookie, "__cookie__:s3cr3t/+=\n");

	it("takes RPC URLs and confirmation overrides per network slug", () => {
		const c = watchersConfigFromEnv({ RPC_URL_ANVIL_LOCAL: "http://127.0.0.1:8545", REQUIRED_CONFIRMATIONS_ETHEREUM: "20" });
		expect(rpcUrlFor(c, "anvil-local")).toBe("http://127.0.0.1:8545");
		expect(rpcUrlFor(c, "ethereum")).toBeNull();
		expect(c.requiredConfirmations).toEqual({ ETHEREUM: 20 });
		expect(() => watchersConfigFromEnv({ RPC_URL_X: "ftp://host" })).toThrow(/http\(s\) or ws\(s\)/);
	});

	it("reads the lag that makes a leading watcher not ready (WATCHER_READY_MAX_LAG)", () => {
		expect(watchersConfigFromEnv({}).readyMaxLag).toBe(50);
		expect(watchersConfigFromEnv({ WATCHER_READY_MAX_LAG: "0" }).readyMaxLag).toBe(0);
		expect(() => watchersConfigFromEnv({ WATCHER_READY_MAX_LAG: "-1" })).toThrow(/WATCHER_READY_MAX_LAG must be a whole number/);
	});

	it("reads the node's cookie file for a URL without credentials, and never logs them", () => {
		const c = watchersConfigFromEnv({ RPC_URL_LITECOIN_REGTEST: "http://127.0.0.1:19443/", RPC_COOKIE_FILE_LITECOIN_REGTEST: cookie });
		const url = rpcUrlFor(c, "litecoin-regtest")!;
		const u = new URL(url);
		expect(decodeURIComponent(u.username)).toBe("__cookie__");
		expect(decodeURIComponent(u.password)).toBe("s3cr3t/+=");
		expect(redactUrl(url)).toBe("http://127.0.0.1:19443");
		// Credentials in the URL win over the cookie file.
		const given = watchersConfigFromEnv({ RPC_URL_LITECOIN_REGTEST: "http://u:p@127.0.0.1:19443/", RPC_COOKIE_FILE_LITECOIN_REGTEST: cookie });
		expect(rpcUrlFor(given, "litecoin-regtest")).toBe("http://u:p@127.0.0.1:19443/");
		fs.writeFileSync(path.join(dir, "bad"), "nocolon");
		expect(() => rpcUrlFor(watchersConfigFromEnv({ RPC_URL_BITCOIN: "http://127.0.0.1:8332", RPC_COOKIE_FILE_BITCOIN: path.join(dir, "bad") }), "bitcoin")).toThrow(/cookie file/);
	});
});
