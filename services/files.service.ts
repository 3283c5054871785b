/**
 * File uploads (POST /files/upload, multipart, one field `file`). The file is stored as
 * DATA_DIR/files/<uuid><ext>, the extension taken from the (whitelisted) type, never from the
 * client's name. Size (config.upload.maxBytes) and type (config.upload.allowedTypes, and the first
 * bytes must match the type) are enforced while streaming; a failed upload leaves no file behind.
 */
import fs from "node:fs";
import path from "node:path";
import { Transform, TransformCallback, Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ActionSchema, Context, Service, ServiceSchema } from "moleculer";
import { appOf } from "../lib/app";
import { badRequest } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { uuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import { SNIFF_BYTES, contentMatches, extensionFor, isTextType, normalizeMimeType, safeOriginalName } from "../lib/files/types";

registerTranslations("es", {
	"File is too large": "El archivo es demasiado grande",
	"File type not allowed": "Tipo de archivo no permitido",
	"A file is required": "Se requiere un archivo",
});

export interface FileView {
	id: string;
	originalName: string;
	mimeType: string;
	size: number;
	/** Where the file lives, relative to DATA_DIR. */
	path: string;
	createdAt: string;
}

interface UploadParams {
	$fieldname?: string;
	$filename?: string;
	$mimetype?: string;
}

type Ctx = Context<UploadParams, AuthMeta>;

/** moleculer-web's multipart route options (its typings know only path and method). */
interface UploadRest {
	method: "POST";
	path: string;
	type: "multipart";
	busboyConfig: { limits: { files: number; fields: number; parts: number; fileSize: number }; onFileSizeLimit(file: Readable): void };
}
type FilesThis = Service;

const FIELD = "file";
const FILES_DIR = "files";

const fileTooLarge = () => badRequest("File is too large", { file: "fileTooLarge" });
const typeNotAllowed = () => badRequest("File type not allowed", { file: "fileTypeNotAllowed" });
const fileRequired = () => badRequest("A file is required", { file: "required" });

/** Counts bytes (a backstop to busboy's own limit) and checks the content against the declared type. */
class UploadGuard extends Transform {
	size = 0;
	private head = Buffer.alloc(0);
	private sniffed = false;

	constructor(
		private readonly maxBytes: number,
		private readonly mimeType: string,
	) {
		super();
	}

	_transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
		this.size += chunk.length;
		if (this.size > this.maxBytes) return done(fileTooLarge());
		if (!this.sniffed) {
			this.head = Buffer.concat([this.head, chunk]).subarray(0, SNIFF_BYTES);
			if (this.head.length >= SNIFF_BYTES) {
				this.sniffed = true;
				if (!contentMatches(this.mimeType, this.head)) return done(typeNotAllowed());
			}
		}
		if (isTextType(this.mimeType) && chunk.includes(0)) return done(typeNotAllowed());
		done(null, chunk);
	}

	_flush(done: TransformCallback): void {
		if (this.size === 0) return done(fileRequired());
		if (!this.sniffed && !contentMatches(this.mimeType, this.head)) return done(typeNotAllowed());
		done();
	}
}

const UPLOAD_REST: UploadRest = {
	method: "POST",
	path: "/files/upload",
	type: "multipart",
	busboyConfig: {
		// fileSize: from the configuration (merged() below).
		limits: { files: 1, fields: 10, parts: 20, fileSize: 0 },
		/**
		 * moleculer-web then destroys the stream with its own 413 error; ending it first with ours
		 * makes the answer the 400 the API documents. (A gateway on another node receives the route
		 * without this function and answers 413 Payload Too Large.)
		 */
		onFileSizeLimit(file: Readable) {
			file.destroy(fileTooLarge());
		},
	},
};

const FilesService: ServiceSchema & { merged(this: Service, schema: ServiceSchema): void } = {
	name: "files",
	settings: { rest: "/" },

	/** The size limit comes from the configuration, which exists only once the broker does. */
	merged(this: Service, schema: ServiceSchema) {
		const { config } = appOf(this.broker);
		// Copies, not edits: the schema module is shared by every broker of the process (tests).
		const upload = schema.actions!.upload as ActionSchema;
		const rest = upload.rest as unknown as UploadRest;
		const sized: UploadRest = { ...rest, busboyConfig: { ...rest.busboyConfig, limits: { ...rest.busboyConfig.limits, fileSize: config.upload.maxBytes } } };
		schema.actions!.upload = { ...upload, rest: sized as unknown as ActionSchema["rest"] };
	},

	actions: {
		upload: {
			rest: UPLOAD_REST as unknown as ActionSchema["rest"],
			auth: "jwt",
			params: {
				$fieldname: { type: "string", optional: true },
				$filename: { type: "string", optional: true },
				$mimetype: { type: "string", optional: true },
			},
			async handler(this: FilesThis, ctx: Ctx): Promise<FileView> {
				const { config, models, clock } = appOf(this.broker);
				const stream = ctx.stream as Readable | null;
				if (!stream || ctx.params.$fieldname !== FIELD) {
					stream?.resume();
					throw fileRequired();
				}
				const mimeType = normalizeMimeType(ctx.params.$mimetype);
				if (!config.upload.allowedTypes.includes(mimeType)) {
					stream.resume();
					throw typeNotAllowed();
				}
				const id = uuid();
				const relative = path.posix.join(FILES_DIR, `${id}${extensionFor(mimeType)}`);
				const dir = path.join(config.dataDir, FILES_DIR);
				const target = path.join(config.dataDir, relative);
				await fs.promises.mkdir(dir, { recursive: true });
				const guard = new UploadGuard(config.upload.maxBytes, mimeType);
				// Opened before the pipeline starts: a write stream opens its file asynchronously, and one
				// refused at once could create the file after the clean-up below had run. "wx": never
				// overwrite; 0o640: not world-readable.
				let file: fs.promises.FileHandle;
				try {
					file = await fs.promises.open(target, "wx", 0o640);
				} catch (err) {
					stream.resume();
					throw err;
				}
				try {
					await pipeline(stream, guard, file.createWriteStream());
					const now = clock.now();
					const row = await models.FileRecord.create({
						id,
						userId: ctx.meta.user!.id,
						path: relative,
						originalName: safeOriginalName(ctx.params.$filename),
						mimeType,
						size: guard.size,
						createdAt: now,
						updatedAt: now,
					});
					ctx.meta.$statusCode = 201;
					return {
						id: row.id,
						originalName: row.originalName,
						mimeType: row.mimeType,
						size: Number(row.size),
						path: row.path,
						createdAt: new Date(row.createdAt).toISOString(),
					};
				} catch (err) {
					await file.close().catch(() => undefined);
					await fs.promises.rm(target, { force: true }).catch(() => undefined);
					stream.resume();
					// busboy's own size error (when the hook above did not run) is the same client error.
					if ((err as { name?: string })?.name === "PayloadTooLarge") throw fileTooLarge();
					throw err;
				}
			},
		},
	},
};

export default FilesService;
