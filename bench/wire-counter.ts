/**
 * Counting TCP proxies for the "round trips per request" figures: the gateway is pointed at them
 * instead of MySQL and Redis, and they count the commands the client sends (MySQL command packets
 * by kind and first SQL keyword, Redis commands by name). Only the client-to-server direction is
 * parsed; everything is forwarded untouched. Used in a separate pass, never while timing.
 */
import net from "node:net";

export type Counts = Record<string, number>;

export interface CountingProxy {
	port: number;
	/** Counts so far (a copy). */
	snapshot(): Counts;
	close(): Promise<void>;
}

/** `after - before`, keeping only keys that moved. */
export function diffCounts(before: Counts, after: Counts): Counts {
	const out: Counts = {};
	for (const [k, v] of Object.entries(after)) {
		const d = v - (before[k] || 0);
		if (d) out[k] = d;
	}
	return out;
}

const MYSQL_COMMANDS: Record<number, string> = {
	0x01: "QUIT",
	0x02: "INIT_DB",
	0x0e: "PING",
	0x11: "CHANGE_USER",
	0x16: "STMT_PREPARE",
	0x17: "STMT_EXECUTE",
	0x19: "STMT_CLOSE",
	0x1a: "STMT_RESET",
	0x1f: "RESET_CONNECTION",
};

/** `SELECT`, `INSERT`, `START TRANSACTION`, `SET` ... of a statement's text. */
export function sqlKind(text: string): string {
	const t = text.replace(/^\s*(\/\*[\s\S]*?\*\/\s*)*/, "").trimStart();
	const m = /^([A-Za-z]+)(\s+[A-Za-z]+)?/.exec(t);
	if (!m) return "other";
	const first = m[1].toUpperCase();
	if (first === "START" || first === "SET" || first === "SHOW") return `${first}${(m[2] || "").toUpperCase()}`.replace(/\s+/g, " ");
	return first;
}

/**
 * Client-to-server MySQL packets: 3-byte length, sequence id, payload. A packet with sequence 0
 * starts a command (the handshake response has sequence 1, so connection set-up is not counted).
 */
export function mysqlCommandParser(count: (name: string) => void): (chunk: Buffer) => void {
	let buf: Buffer = Buffer.alloc(0);
	return chunk => {
		buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
		while (buf.length >= 4) {
			const len = buf.readUIntLE(0, 3);
			if (buf.length < 4 + len) break;
			const seq = buf[3];
			if (seq === 0 && len > 0) {
				const cmd = buf[4];
				if (cmd === 0x03) count(`sql ${sqlKind(buf.subarray(5, 4 + Math.min(len, 64)).toString("utf8"))}`);
				else count(`mysql ${MYSQL_COMMANDS[cmd] || `0x${cmd.toString(16)}`}`);
			}
			buf = buf.subarray(4 + len);
		}
	};
}

/** Client-to-server RESP: each command is an array of bulk strings; pipelined commands count one by one. */
export function redisCommandParser(count: (name: string) => void): (chunk: Buffer) => void {
	let buf: Buffer = Buffer.alloc(0);
	const line = (from: number): { text: string; next: number } | null => {
		const end = buf.indexOf("\r\n", from);
		return end < 0 ? null : { text: buf.toString("latin1", from, end), next: end + 2 };
	};
	return chunk => {
		buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
		for (;;) {
			if (buf.length === 0) return;
			if (buf[0] !== 0x2a /* '*' */) {
				// Inline command (never sent by ioredis): one line.
				const l = line(0);
				if (!l) return;
				count(`redis ${l.text.split(" ")[0].toUpperCase()}`);
				buf = buf.subarray(l.next);
				continue;
			}
			const head = line(0);
			if (!head) return;
			const n = Number(head.text.slice(1));
			let pos = head.next;
			let name = "";
			let complete = true;
			for (let i = 0; i < n; i++) {
				const bulk = line(pos);
				if (!bulk) {
					complete = false;
					break;
				}
				const size = Number(bulk.text.slice(1));
				if (buf.length < bulk.next + size + 2) {
					complete = false;
					break;
				}
				if (i === 0) name = buf.toString("latin1", bulk.next, bulk.next + size).toUpperCase();
				pos = bulk.next + size + 2;
			}
			if (!complete) return;
			count(`redis ${name}`);
			buf = buf.subarray(pos);
		}
	};
}

/** A proxy on 127.0.0.1 (free port) to `target`, counting what `makeParser` recognises. */
export async function startCountingProxy(target: { host: string; port: number }, makeParser: (count: (name: string) => void) => (chunk: Buffer) => void): Promise<CountingProxy> {
	const counts: Counts = {};
	const count = (name: string) => {
		counts[name] = (counts[name] || 0) + 1;
	};
	const sockets = new Set<net.Socket>();
	const server = net.createServer(client => {
		const upstream = net.connect(target.port, target.host);
		sockets.add(client);
		sockets.add(upstream);
		const parse = makeParser(count);
		client.on("data", chunk => {
			parse(chunk);
			upstream.write(chunk);
		});
		upstream.on("data", chunk => client.write(chunk));
		const close = () => {
			client.destroy();
			upstream.destroy();
			sockets.delete(client);
			sockets.delete(upstream);
		};
		client.on("close", close);
		upstream.on("close", close);
		client.on("error", close);
		upstream.on("error", close);
	});
	await new Promise<void>((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => resolve());
	});
	const port = (server.address() as net.AddressInfo).port;
	return {
		port,
		snapshot: () => ({ ...counts }),
		close: () =>
			new Promise<void>(resolve => {
				for (const s of sockets) s.destroy();
				server.close(() => resolve());
			}),
	};
}
