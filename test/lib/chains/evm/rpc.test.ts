/**
 * The shared EVM provider (lib/chains/evm/rpc.ts) against a real anvil behind a loopback proxy:
 * credentials in the URL reach the node as a Basic header, and an error page quoting the URL and
 * its API key never leaves the provider with a secret in it.
 */
import { createEvmProvider } from "../../../../lib/chains/evm/rpc";
import { redactUrlsIn, rpcCredentials, scrubRpcText } from "../../../../lib/watchers/config";
import { startAnvil, Anvil } from "../../../helpers/anvil";
import { startRpcProxy, RpcProxy } from "../../../helpers/rpc-proxy";

const USER = "rpc-user";
const PASSWORD = "pa55-Word-s3cret";
const KEY = "QueryKey0123456789abcdef";
const PATH_KEY = "PathKey9876543210fedcba";

/** Everything an error carries that could be logged or sent to error tracking. */
function everything(err: unknown): string {
	const e = err as Record<string, unknown>;
	let json = "";
	try {
		json = JSON.stringify(e, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
	} catch {
		json = "";
	}
	return [String(err), e.message, e.shortMessage, e.stack, json, JSON.stringify(e.info ?? null)].join("\n");
}

describe("rpcCredentials and scrubbing", () => {
	it("moves credentials into a Basic header and lists the URL's secrets", () => {
		const r = rpcCredentials(`https://${USER}:${encodeURIComponent(PASSWORD)}@rpc.example.com/v2/${PATH_KEY}?apikey=${KEY}`);
		expect(r.url).toBe(`https://rpc.example.com/v2/${PATH_KEY}?apikey=${KEY}`);
		expect(r.authorization).toBe(`Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString("base64")}`);
		expect(r.secrets).toEqual(expect.arrayContaining([PASSWORD, KEY, PATH_KEY, USER]));
		const text = `failed (requestUrl="${r.url}", body="echo ${KEY} ${PASSWORD}")`;
		const scrubbed = scrubRpcText(text, r.secrets);
		for (const s of [KEY, PASSWORD, PATH_KEY]) expect(scrubbed).not.toContain(s);
		expect(scrubbed).toContain("https://rpc.example.com");
		expect(rpcCredentials("http://127.0.0.1:8545").authorization).toBeNull();
		expect(redactUrlsIn(`see http://u:p@h.example:81/x?k=${KEY} now`)).toBe("see http://h.example:81/… now");
	});
});

describe("createEvmProvider on anvil behind a proxy", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;

	beforeAll(async () => {
		anvil = await startAnvil();
		proxy = await startRpcProxy(anvil.url, { auth: { user: USER, password: PASSWORD } });
	}, 60_000);

	afterAll(async () => {
		await proxy?.stop();
		await anvil?.stop();
	});

	it("reads the chain through http://user:pass@host (the credentials sent as a header)", async () => {
		const provider = createEvmProvider(`http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${proxy.port}/`, { chainId: anvil.chainId, timeoutMs: 10_000 });
		try {
			expect(await provider.getBlockNumber()).toBeGreaterThanOrEqual(0);
			expect(await provider.getBalance(anvil.addresses[0])).toBeGreaterThan(0n);
		} finally {
			provider.destroy();
		}
		// Without them the proxy says 401: the header is what got us in.
		const bare = createEvmProvider(`http://127.0.0.1:${proxy.port}/`, { chainId: anvil.chainId, timeoutMs: 10_000 });
		try {
			await expect(bare.getBlockNumber()).rejects.toMatchObject({ code: "SERVER_ERROR" });
		} finally {
			bare.destroy();
		}
	});

	it("answers a 502 page quoting the URL with an error that holds neither the key nor the password", async () => {
		const url = `http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${proxy.port}/v2/${PATH_KEY}?apikey=${KEY}`;
		const provider = createEvmProvider(url, { chainId: anvil.chainId, timeoutMs: 10_000 });
		try {
			proxy.failNext(1, 502, { echoUrl: true });
			const err = await provider.getBlockNumber().then(() => null, e => e);
			expect(err).not.toBeNull();
			// The classification callers use is kept.
			expect(err).toMatchObject({ code: "SERVER_ERROR" });
			expect(String(err.info?.responseStatus)).toMatch(/^502/);
			const text = everything(err);
			expect(text).toContain("Bad Gateway");
			for (const secret of [KEY, PASSWORD, PATH_KEY]) expect(text).not.toContain(secret);
			// And the provider works again afterwards.
			expect(await provider.getBlockNumber()).toBeGreaterThanOrEqual(0);
		} finally {
			provider.destroy();
		}
	});
});
