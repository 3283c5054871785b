/**
 * Uploaded files: the stored extension by MIME type (never the client's file name) and a check
 * that the first bytes match the declared type, so a renamed executable is not stored as an image.
 */
const EXTENSIONS: Record<string, string> = {
	"image/png": ".png",
	"image/jpeg": ".jpg",
	"image/gif": ".gif",
	"image/webp": ".webp",
	"application/pdf": ".pdf",
	"text/plain": ".txt",
	"text/csv": ".csv",
};

/** The bytes we need to see before deciding. */
export const SNIFF_BYTES = 12;

/** Normalised MIME type: lower case, no parameters (`text/plain; charset=utf-8` -> `text/plain`). */
export function normalizeMimeType(value: unknown): string {
	return typeof value === "string" ? value.split(";")[0].trim().toLowerCase() : "";
}

export function extensionFor(mimeType: string): string {
	return EXTENSIONS[mimeType] ?? ".bin";
}

const startsWith = (head: Buffer, bytes: number[], offset = 0) => head.length >= offset + bytes.length && bytes.every((b, i) => head[offset + i] === b);

/**
 * Whether the first bytes of the content fit the declared type. Text types must not carry NUL
 * bytes; types we have no signature for are accepted as declared.
 */
export function contentMatches(mimeType: string, head: Buffer): boolean {
	switch (mimeType) {
		case "image/png":
			return startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
		case "image/jpeg":
			return startsWith(head, [0xff, 0xd8, 0xff]);
		case "image/gif":
			return startsWith(head, [0x47, 0x49, 0x46, 0x38]) && (head[4] === 0x37 || head[4] === 0x39) && head[5] === 0x61;
		case "image/webp":
			return startsWith(head, [0x52, 0x49, 0x46, 0x46]) && startsWith(head, [0x57, 0x45, 0x42, 0x50], 8);
		case "application/pdf":
			return startsWith(head, [0x25, 0x50, 0x44, 0x46, 0x2d]);
		case "text/plain":
		case "text/csv":
			return !head.includes(0);
		default:
			return true;
	}
}

export function isTextType(mimeType: string): boolean {
	return mimeType.startsWith("text/");
}

/** A display name from the client's file name: base name only, no control characters, bounded. */
export function safeOriginalName(value: unknown): string {
	const raw = typeof value === "string" ? value : "";
	const base = raw.split(/[\\/]/).pop() || "";
	// eslint-disable-next-line no-control-regex
	const clean = Array.from(base.replace(/[\u0000-\u001f\u007f]/g, "").trim()).slice(0, 255).join("");
	return clean || "file";
}
