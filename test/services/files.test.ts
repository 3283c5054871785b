/**
 * POST /files/upload over HTTP: stored under DATA_DIR/files with a generated name, size and type
 * limits enforced while streaming, and nothing left behind by a failed upload.
 */
import fs from "node:fs";
import path from "node:path";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { createUserWithToken, UserWithToken } from "../helpers/users";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(100, 7)]);
const MAX = 2048;

function form(content: Buffer | string, opts: { name?: string; type?: string; field?: string } = {}): FormData {
	const f = new FormData();
	f.append(opts.field ?? "file", new Blob([content], { type: opts.type ?? "text/plain" }), opts.name ?? "note.txt");
	return f;
}

describe("files", () => {
	let node: TestNode;
	let user: UserWithToken;
	let filesDir: string;
	const stored = () => (fs.existsSync(filesDir) ? fs.readdirSync(filesDir) : []);
	/**
	 * Files on disk that were not there in `before`. A refused upload's partial file can appear and
	 * go after its 400 is answered (moleculer-web answers a size error while the handler still runs),
	 * so callers wait for this to settle rather than count at one instant.
	 */
	const addedSince = (before: string[]) => stored().filter(name => !before.includes(name));

	beforeAll(async () => {
		node = await startNode({ services: ["api", "auth", "organizations", "files"], env: { UPLOAD_MAX_BYTES: String(MAX) } });
		user = await createUserWithToken(node);
		filesDir = path.join(node.dataDir, "files");
	});
	afterAll(async () => {
		await node?.stop();
	});

	it("stores a file under a generated name and records it", async () => {
		const res = await node.http("POST", "/files/upload", { token: user.token, rawBody: form(PNG, { name: "../../etc/passwd.png", type: "image/png" }) });
		expect(res.status).toBe(201);
		expect(Object.keys(res.body).sort()).toEqual(["createdAt", "id", "mimeType", "originalName", "path", "size"]);
		expect(res.body).toMatchObject({ originalName: "passwd.png", mimeType: "image/png", size: PNG.length, path: `files/${res.body.id}.png` });
		const onDisk = path.join(node.dataDir, res.body.path);
		expect(fs.readFileSync(onDisk).equals(PNG)).toBe(true);
		const row = await node.app.models.FileRecord.findByPk(res.body.id);
		expect(row).toMatchObject({ userId: user.user.id, path: res.body.path, size: PNG.length });
	});

	it("accepts a file of exactly the limit and refuses one byte more with 400 fileTooLarge", async () => {
		const before = stored();
		const ok = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("a".repeat(MAX)) });
		expect(ok.status).toBe(201);
		expect(ok.body.size).toBe(MAX);
		const big = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("a".repeat(MAX + 1)) });
		expect(big.status).toBe(400);
		expect(big.body).toEqual({ statusCode: 400, message: "File is too large", error: "Bad Request", errors: { file: "fileTooLarge" } });
		const huge = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("a".repeat(MAX * 200)), headers: { "x-custom-lang": "es" } });
		expect(huge.status).toBe(400);
		expect(huge.body.message).toBe("El archivo es demasiado grande");
		// Only the accepted file is left; the partial ones are removed (unlinked after the answer).
		const accepted = path.basename(ok.body.path);
		await until("the partial uploads removed", () => addedSince(before).join() === accepted, 20_000, () => `added: ${addedSince(before).join()}, expected ${accepted}`);
		expect(await node.app.models.FileRecord.count({ where: { size: MAX + 1 } })).toBe(0);
	});

	it("refuses types outside the whitelist and content that does not match its type", async () => {
		const before = stored();
		const exe = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("MZ\x90\x00", { name: "a.exe", type: "application/x-msdownload" }) });
		expect(exe.status).toBe(400);
		expect(exe.body).toEqual({ statusCode: 400, message: "File type not allowed", error: "Bad Request", errors: { file: "fileTypeNotAllowed" } });
		const fakePng = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("<script>alert(1)</script>", { name: "x.png", type: "image/png" }) });
		expect(fakePng.status).toBe(400);
		expect(fakePng.body.errors).toEqual({ file: "fileTypeNotAllowed" });
		const binaryText = await node.http("POST", "/files/upload", { token: user.token, rawBody: form(Buffer.from("abc\x00def".repeat(10)), { type: "text/plain" }) });
		expect(binaryText.status).toBe(400);
		await until("nothing left by the refused uploads", () => addedSince(before).length === 0, 20_000, () => `added: ${addedSince(before).join()}`);
	});

	it("needs the file in the field `file`", async () => {
		const other = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("hello", { field: "upload" }) });
		expect(other.status).toBe(400);
		expect(other.body.errors).toEqual({ file: "required" });
		const fieldsOnly = new FormData();
		fieldsOnly.append("note", "no file here");
		const noFile = await node.http("POST", "/files/upload", { token: user.token, rawBody: fieldsOnly });
		expect(noFile.status).toBe(400);
		expect(noFile.body.errors).toEqual({ file: "required" });
		const empty = await node.http("POST", "/files/upload", { token: user.token, rawBody: "--XyZ--\r\n", headers: { "Content-Type": "multipart/form-data; boundary=XyZ" } });
		expect(empty.status).toBe(400);
		expect(empty.body.errors).toEqual({ file: "required" });
		const emptyFile = await node.http("POST", "/files/upload", { token: user.token, rawBody: form("") });
		expect(emptyFile.status).toBe(400);
		expect(emptyFile.body.errors).toEqual({ file: "required" });
		const json = await node.http("POST", "/files/upload", { token: user.token, body: { file: "x" } });
		expect(json.status).toBe(400);
	});

	it("needs a bearer token", async () => {
		const res = await node.http("POST", "/files/upload", { rawBody: form("hello") });
		expect(res.status).toBe(401);
	});

	it("leaves on disk exactly the files it recorded once every upload has finished", async () => {
		const recorded = async () => (await node.app.models.FileRecord.findAll()).map(r => path.basename(r.path)).sort().join();
		const expected = await recorded();
		expect(expected.split(",").length).toBe(2);
		await until("the files on disk match the records", () => stored().sort().join() === expected, 20_000, () => `on disk: ${stored().sort().join()}, recorded: ${expected}`);
	});
});
