import { contentMatches, extensionFor, normalizeMimeType, safeOriginalName } from "../../../lib/files/types";

const bytes = (...b: number[]) => Buffer.from(b);

describe("lib/files/types", () => {
	it("normalises MIME types and maps them to stored extensions", () => {
		expect(normalizeMimeType("Text/Plain; charset=UTF-8")).toBe("text/plain");
		expect(normalizeMimeType(undefined)).toBe("");
		expect(extensionFor("image/jpeg")).toBe(".jpg");
		expect(extensionFor("application/pdf")).toBe(".pdf");
		expect(extensionFor("application/x-unknown")).toBe(".bin");
	});

	it("checks the first bytes against the declared type", () => {
		expect(contentMatches("image/png", bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0))).toBe(true);
		expect(contentMatches("image/png", Buffer.from("<svg onload=x>"))).toBe(false);
		expect(contentMatches("image/jpeg", bytes(0xff, 0xd8, 0xff, 0xe0))).toBe(true);
		expect(contentMatches("image/gif", Buffer.from("GIF89a......"))).toBe(true);
		expect(contentMatches("image/gif", Buffer.from("GIF80a......"))).toBe(false);
		expect(contentMatches("image/webp", Buffer.from("RIFF\x00\x00\x00\x00WEBP"))).toBe(true);
		expect(contentMatches("image/webp", Buffer.from("RIFF\x00\x00\x00\x00WAVE"))).toBe(false);
		expect(contentMatches("application/pdf", Buffer.from("%PDF-1.7\n"))).toBe(true);
		expect(contentMatches("application/pdf", Buffer.from("MZ\x90\x00"))).toBe(false);
		expect(contentMatches("text/csv", Buffer.from("a,b\n1,2\n"))).toBe(true);
		expect(contentMatches("text/plain", Buffer.from("a\x00b"))).toBe(false);
	});

	it("keeps only a safe base name of the client's file name", () => {
		expect(safeOriginalName("../../etc/passwd")).toBe("passwd");
		expect(safeOriginalName("C:\\Users\\me\\report.pdf")).toBe("report.pdf");
		expect(safeOriginalName("bad\r\nname\u0000.txt")).toBe("badname.txt");
		expect(safeOriginalName("")).toBe("file");
		expect(safeOriginalName(undefined)).toBe("file");
		expect(safeOriginalName("é".repeat(400))).toHaveLength(255);
	});
});
