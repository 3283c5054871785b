/**
 * A loopback TCP proxy the test controls, put between a node and MySQL, Redis or NATS to stage an
 * outage: `cut()` stops listening and drops every open connection (the server looks stopped:
 * connections are refused), `restore()` listens again on the same port. `stall()` keeps every
 * connection open but passes nothing either way, new ones included (the server hangs);
 * `resume()` lets the bytes through again.
 */
import net from "node:net";

export interface TcpProxy {
	port: number;
	/** `url` with its host and port replaced by the proxy's. */
	through(url: string): string;
	cut(): Promise<void>;
	restore(): Promise<void>;
	stall(): void;
	resume(): void;
	close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
	const sockets = new Set<net.Socket>();
	/** Open relays (source, destination), to stop and restart their flow. */
	const pipes = new Set<[net.Socket, net.Socket]>();
	/** Clients accepted while stalled: relayed once resumed. */
	const waiting = new Set<net.Socket>();
	let stalled = false;
	const connectUpstream = (client: net.Socket) => {
		const upstream = net.connect(target.port, target.host);
		for (const pair of [
			[client, upstream],
			[upstream, client],
		] as Array<[net.Socket, net.Socket]>) {
			const [from, to] = pair;
			sockets.add(from);
			pipes.add(pair);
			from.pipe(to);
			from.on("error", () => to.destroy());
			from.on("close", () => {
				sockets.delete(from);
				pipes.delete(pair);
				to.destroy();
			});
		}
	};
	const relay = (client: net.Socket) => {
		if (!stalled) return connectUpstream(client);
		client.pause();
		waiting.add(client);
		sockets.add(client);
		client.on("error", () => client.destroy());
		client.on("close", () => {
			waiting.delete(client);
			sockets.delete(client);
		});
	};
	let server: net.Server | null = null;
	let port = 0;
	const listen = () =>
		new Promise<void>((resolve, reject) => {
			const s = net.createServer(relay);
			s.once("error", reject);
			s.listen(port, "127.0.0.1", () => {
				server = s;
				port = (s.address() as net.AddressInfo).port;
				resolve();
			});
		});
	const cut = () =>
		new Promise<void>(resolve => {
			const s = server;
			server = null;
			for (const socket of sockets) socket.destroy();
			if (!s) return resolve();
			s.close(() => resolve());
		});
	await listen();
	return {
		get port() {
			return port;
		},
		through(url: string) {
			const u = new URL(url);
			u.hostname = "127.0.0.1";
			u.port = String(port);
			return u.toString().replace(/\/$/, "");
		},
		cut,
		restore: listen,
		stall() {
			stalled = true;
			for (const [from, to] of pipes) {
				from.unpipe(to);
				from.pause();
			}
		},
		resume() {
			stalled = false;
			for (const [from, to] of pipes) from.pipe(to);
			for (const client of waiting) {
				waiting.delete(client);
				sockets.delete(client);
				client.removeAllListeners("close");
				client.removeAllListeners("error");
				connectUpstream(client);
			}
		},
		close: cut,
	};
}

/** Where a `mysql://` or `redis://` URL points. */
export function targetOf(url: string, defaultPort: number): { host: string; port: number } {
	const u = new URL(url);
	return { host: u.hostname, port: Number(u.port || defaultPort) };
}
