import { isInternalAddress, webhookUrlProblem } from "../../../lib/keys/webhook-url";

const dev = { production: false };
const prod = { production: true };

describe("lib/keys/webhook-url", () => {
	it("accepts http(s) URLs in development, including local ones", () => {
		for (const url of ["http://localhost:4000/hook", "https://merchant.example/hooks?x=1", "http://127.0.0.1:9/h", "http://[::1]:8080/"]) {
			expect(webhookUrlProblem(url, dev)).toBeNull();
		}
	});

	it("refuses anything that is not an absolute http(s) URL without credentials", () => {
		for (const url of ["ftp://example.com/", "javascript:alert(1)", "example.com/hook", "", "http://", "https://user:pw@example.com/", "file:///etc/passwd", "https://x.example/" + "a".repeat(2048)]) {
			expect(webhookUrlProblem(url, dev)).toBe("invalidUrl");
		}
	});

	it("in production requires HTTPS and a public address", () => {
		expect(webhookUrlProblem("https://merchant.example/hooks", prod)).toBeNull();
		expect(webhookUrlProblem("https://93.184.216.34/hooks", prod)).toBeNull();
		expect(webhookUrlProblem("http://merchant.example/hooks", prod)).toBe("httpsRequired");
		for (const url of [
			"https://localhost/",
			"https://api.localhost/",
			"https://127.0.0.1/",
			"https://0x7f.1/",
			"https://10.1.2.3/",
			"https://172.20.0.1/",
			"https://192.168.1.1/",
			"https://169.254.169.254/latest/meta-data",
			"https://100.64.0.1/",
			"https://0.0.0.0/",
			"https://[::1]/",
			"https://[fd00::1]/",
			"https://[fe80::1]/",
			"https://[::ffff:127.0.0.1]/",
			"https://[::ffff:a00:1]/",
		]) {
			expect([url, webhookUrlProblem(url, prod)]).toEqual([url, "privateAddress"]);
		}
	});

	it("in production refuses IPv6 forms that carry or reach an internal IPv4 address, and other non-global IPv6", () => {
		for (const url of [
			"https://[::127.0.0.1]/", // IPv4-compatible (::/96)
			"https://[::a9fe:a9fe]/",
			"https://[::8.8.8.8]/", // deprecated form: refused whatever it carries
			"https://[64:ff9b::a9fe:a9fe]/", // NAT64: 169.254.169.254 where NAT64 exists
			"https://[64:ff9b::127.0.0.1]/",
			"https://[64:ff9b:1::1]/", // local-use NAT64
			"https://[2002:a9fe:a9fe::]/", // 6to4 of 169.254.169.254
			"https://[2002:7f00:1::1]/",
			"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", // Teredo
			"https://[::ffff:0:7f00:1]/", // SIIT (RFC 6145)
			"https://[fec0::1]/", // site-local
			"https://[ff02::1]/",
			"https://[100::1]/", // discard-only
			"https://[2001:db8::1]/", // documentation
			"https://[4000::1]/", // outside 2000::/3, unallocated
		]) {
			expect([url, webhookUrlProblem(url, prod)]).toEqual([url, "privateAddress"]);
		}
		expect(webhookUrlProblem("https://[2606:4700:4700::1111]/hooks", prod)).toBeNull();
	});

	it("classifies literal addresses: only global unicast is public", () => {
		const internal = [
			// IPv4
			"0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "127.0.0.1", "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255",
			"192.0.0.8", "192.0.2.1", "192.168.0.10", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
			// IPv6, and IPv4 inside IPv6
			"::", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:8.8.8.8", "::127.0.0.1", "::a9fe:a9fe", "::8.8.8.8",
			"64:ff9b::a9fe:a9fe", "64:ff9b::8.8.8.8", "2002:a9fe:a9fe::", "2002:808:808::1", "2001::1", "fec0::1", "fc00::1", "fd12:3456::1",
			"fe80::1", "fe80::1%eth0", "ff02::1", "100::1", "2001:db8::1", "[::1]", "[fec0::1]",
		];
		for (const address of internal) expect([address, isInternalAddress(address)]).toEqual([address, true]);
		for (const address of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "2606:4700::1111", "2a00:1450:4001:81b::200e", "[2606:4700::1111]"]) {
			expect([address, isInternalAddress(address)]).toEqual([address, false]);
		}
		// Names are not addresses: a name can only be checked where it is resolved (the sender does).
		expect(isInternalAddress("merchant.example")).toBe(false);
		expect(isInternalAddress("localhost")).toBe(false);
	});
});
