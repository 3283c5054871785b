/** The npm scripts' option parser (lib/cli-args.ts): forms, errors, ports and URLs. */
import { parseCliArgs, parseHttpUrl, parsePort } from "../../lib/cli-args";

const SPEC = { port: "value", fresh: "flag" } as const;

describe("parseCliArgs", () => {
	it("reads --name value, --name=value and flags anywhere; `--` ends the options", () => {
		expect(parseCliArgs(["a", "--port", "8546", "b", "--fresh"], SPEC, "usage")).toEqual({ options: { port: "8546", fresh: true }, positionals: ["a", "b"] });
		expect(parseCliArgs(["--port=9000"], SPEC, "usage")).toEqual({ options: { port: "9000" }, positionals: [] });
		expect(parseCliArgs(["--", "--port", "x"], SPEC, "usage")).toEqual({ options: {}, positionals: ["--port", "x"] });
	});

	it("refuses unknown options, missing values, values on flags and repeats", () => {
		expect(() => parseCliArgs(["--host", "x"], SPEC, "the usage")).toThrow("Unknown option --host\nthe usage");
		expect(() => parseCliArgs(["--port"], SPEC, "the usage")).toThrow("--port needs a value\nthe usage");
		expect(() => parseCliArgs(["--port", "--fresh"], SPEC, "u")).toThrow(/--port needs a value/);
		expect(() => parseCliArgs(["--port="], SPEC, "u")).toThrow(/--port needs a value/);
		expect(() => parseCliArgs(["--fresh=yes"], SPEC, "u")).toThrow("--fresh takes no value");
		expect(() => parseCliArgs(["--port", "1", "--port", "2"], SPEC, "u")).toThrow("--port is given twice");
	});
});

describe("parsePort / parseHttpUrl", () => {
	it("takes ports 1 to 65535 and http(s) URLs only", () => {
		expect(parsePort("8546", "--port")).toBe(8546);
		expect(parsePort("65535", "--port")).toBe(65535);
		for (const bad of ["0", "65536", "-1", "85.4", "abc", "", "1e3"]) expect(() => parsePort(bad, "--port")).toThrow(/--port must be a port number from 1 to 65535/);
		expect(parseHttpUrl(" https://node.example/v2/key ", "--rpc-url")).toBe("https://node.example/v2/key");
		expect(() => parseHttpUrl("wss://node.example", "--rpc-url")).toThrow("--rpc-url must be an http(s) URL (JSON-RPC over HTTP), got a wss: URL");
		// A malformed URL is not echoed: it may carry a key.
		expect(() => parseHttpUrl("key-abc123 not a url", "X")).toThrow(/^X must be an http\(s\) URL like http:\/\/127\.0\.0\.1:8545 \(the value given is not a URL\)$/);
	});
});
