/**
 * The floors of the benchmark: what one Node process can do at best for the same work, without
 * the gateway. Forked by bench/run.ts (one process, like the gateway node), answers on 127.0.0.1
 * and reports its port over IPC.
 *
 *   hello   every request answers a small JSON object.
 *   insert  POST: parses the JSON body, checks the same fields, and writes one payment intent and
 *           its payment link in one transaction with raw mysql2 (pool of 20, like Sequelize's; the
 *           callback API Sequelize itself uses, not mysql2/promise, whose per-query stack capture
 *           costs ~70 us), then answers 201 with a JSON body shaped like the gateway's.
 *   select  GET /<id>: the read of retrieve-intent, one SELECT by id and organization on the
 *           gateway's own payment_intents table (FLOOR_ORGANIZATION_ID), 404 when absent, else
 *           the row as JSON. Informational: the floor for retrieve is hello.
 */
import http from "node:http";
import crypto from "node:crypto";
import type { AddressInfo } from "node:net";
import mysql from "mysql2";
import { FLOOR_INTENTS_TABLE, FLOOR_LINKS_TABLE } from "./floor-schema";

const DECIMAL = /^(0|[1-9]\d{0,39})(\.\d{1,18})?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DIGEST_KEY = crypto.randomBytes(32);
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function randomToken(length: number): string {
	const bytes = crypto.randomBytes(length);
	let out = "";
	for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % 62];
	return out;
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
	const text = JSON.stringify(body);
	res.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": Buffer.byteLength(text) });
	res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
	return new Promise((resolve, reject) => {
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
		req.on("error", reject);
	});
}

interface IntentBody {
	amount: string;
	currency: string;
	payment_method_types: string[];
	tokenId: string;
	networkId: string;
	return_url: string;
	description?: string;
	metadata?: Record<string, unknown>;
}

function checkBody(b: unknown): IntentBody | null {
	if (!b || typeof b !== "object" || Array.isArray(b)) return null;
	const o = b as Record<string, unknown>;
	if (typeof o.amount !== "string" || !DECIMAL.test(o.amount)) return null;
	if (typeof o.currency !== "string" || !/^[a-z0-9]{2,12}$/.test(o.currency)) return null;
	if (!Array.isArray(o.payment_method_types) || !o.payment_method_types.includes("crypto")) return null;
	if (typeof o.tokenId !== "string" || !UUID.test(o.tokenId) || typeof o.networkId !== "string" || !UUID.test(o.networkId)) return null;
	if (typeof o.return_url !== "string") return null;
	if (o.description !== undefined && typeof o.description !== "string") return null;
	if (o.metadata !== undefined && (typeof o.metadata !== "object" || o.metadata === null || Array.isArray(o.metadata))) return null;
	try {
		new URL(o.return_url);
	} catch {
		return null;
	}
	return o as unknown as IntentBody;
}

type Conn = mysql.PoolConnection;

function getConnection(pool: mysql.Pool): Promise<Conn> {
	return new Promise((resolve, reject) => pool.getConnection((err, conn) => (err ? reject(err) : resolve(conn))));
}

function run(conn: Conn, sql: string, params?: mysql.ExecuteValues[]): Promise<void> {
	return new Promise((resolve, reject) => {
		const done = (err: unknown) => (err ? reject(err) : resolve());
		if (params) conn.execute(sql, params, done);
		else conn.query(sql, done);
	});
}

function helloHandler(): http.RequestListener {
	return (_req, res) => send(res, 200, { name: "floor", ok: true, time: new Date().toISOString() });
}

function insertHandler(pool: mysql.Pool, organizationId: string, publicUrl: string): http.RequestListener {
	return (req, res) => {
		void (async () => {
			if (req.method !== "POST") return send(res, 404, { statusCode: 404, message: "Not Found" });
			const body = checkBody(JSON.parse(await readBody(req)));
			if (!body) return send(res, 400, { statusCode: 400, message: "Validation failed" });
			const id = crypto.randomUUID();
			const linkId = crypto.randomUUID();
			const slug = randomToken(16);
			const clientSecret = `${id}_secret_${randomToken(32)}`;
			const now = new Date();
			// Keyed digest, as the gateway keeps client secrets.
			const secretDigest = crypto.createHmac("sha256", DIGEST_KEY).update(clientSecret).digest("hex");
			const conn = await getConnection(pool);
			try {
				await run(conn, "START TRANSACTION");
				await run(
					conn,
					`INSERT INTO ${FLOOR_INTENTS_TABLE} (id, organizationId, apiKeyId, mode, amount, currency, tokenId, networkId, tokenAmount, status, paymentMethodTypes, clientSecretDigest, returnUrl, description, metadata, paymentLinkId, createdAt, updatedAt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
					[id, organizationId, 1, "sandbox", body.amount, body.currency, body.tokenId, body.networkId, body.amount, "requires_payment_method", JSON.stringify(body.payment_method_types), secretDigest, body.return_url, body.description ?? null, JSON.stringify(body.metadata ?? {}), linkId, now, now],
				);
				await run(
					conn,
					`INSERT INTO ${FLOOR_LINKS_TABLE} (id, organizationId, mode, intentId, ownedByIntent, slug, title, amount, tokenId, networkId, status, metadata, singleUse, createdAt, updatedAt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
					[linkId, organizationId, "sandbox", id, 1, slug, body.description ?? "Payment", body.amount, body.tokenId, body.networkId, "active", "{}", 1, now, now],
				);
				await run(conn, "COMMIT");
			} catch (err) {
				await run(conn, "ROLLBACK").catch(() => undefined);
				throw err;
			} finally {
				conn.release();
			}
			send(res, 201, {
				id,
				amount: body.amount,
				currency: body.currency,
				status: "requires_payment_method",
				paymentMethodTypes: body.payment_method_types,
				clientSecret,
				returnUrl: body.return_url,
				paymentLink: { id: linkId, link: `${publicUrl}/pay/${slug}` },
				createdAt: now.toISOString(),
			});
		})().catch(err => {
			if (!res.headersSent) send(res, 500, { statusCode: 500, message: String((err as Error)?.message || err) });
		});
	};
}

function selectHandler(pool: mysql.Pool, organizationId: string): http.RequestListener {
	return (req, res) => {
		const id = decodeURIComponent((req.url || "/").split("?")[0].split("/").pop() || "");
		if (!UUID.test(id)) return send(res, 404, { statusCode: 404, message: "Payment intent not found" });
		pool.execute("SELECT * FROM payment_intents WHERE id = ? AND organizationId = ? LIMIT 1", [id, organizationId], (err, rows) => {
			if (err) return send(res, 500, { statusCode: 500, message: err.message });
			const row = (rows as Array<Record<string, any>>)[0];
			if (!row) return send(res, 404, { statusCode: 404, message: "Payment intent not found" });
			send(res, 200, {
				id: row.id,
				amount: row.amount,
				currency: row.currency,
				status: row.status,
				paymentMethodTypes: JSON.parse(row.paymentMethodTypes),
				latestTransaction: null,
				createdAt: new Date(row.createdAt).toISOString(),
				updatedAt: new Date(row.updatedAt).toISOString(),
			});
		});
	};
}

async function main(): Promise<void> {
	const mode = process.argv[2];
	let handler: http.RequestListener;
	let pool: mysql.Pool | null = null;
	if (mode === "hello") handler = helloHandler();
	else if (mode === "insert") {
		const url = process.env.FLOOR_DATABASE_URL;
		if (!url) throw new Error("FLOOR_DATABASE_URL is required");
		pool = mysql.createPool({ uri: url, connectionLimit: 20, timezone: "Z" });
		handler = insertHandler(pool, crypto.randomUUID(), "http://127.0.0.1");
	} else if (mode === "select") {
		const url = process.env.FLOOR_DATABASE_URL;
		const org = process.env.FLOOR_ORGANIZATION_ID;
		if (!url || !org) throw new Error("FLOOR_DATABASE_URL and FLOOR_ORGANIZATION_ID are required");
		pool = mysql.createPool({ uri: url, connectionLimit: 20, timezone: "Z" });
		handler = selectHandler(pool, org);
	} else throw new Error(`unknown floor mode "${mode}" (hello | insert | select)`);
	const server = http.createServer(handler);
	server.keepAliveTimeout = 65_000;
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
	process.send?.({ port: (server.address() as AddressInfo).port });
	const stop = () => {
		server.close();
		server.closeAllConnections();
		if (pool) pool.end(() => process.exit(0));
		else process.exit(0);
	};
	process.on("SIGTERM", stop);
	process.on("disconnect", stop);
}

main().catch(err => {
	console.error(`floor-server: ${err instanceof Error ? err.message : String(err)}`);
	process.exit(1);
});
