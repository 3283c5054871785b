/**
 * A loopback TCP proxy the test controls, put between a node and MySQL or Redis to stage an
 * outage: `cut()` stops listening and drops every open connection (the server looks stopped:
 * connections are refused), `restore()` listens again on the same port.
 */
import net from "node:net";

export interface TcpProxy {
	port: number;
	/** `url` with its host and port replaced by the proxy's. */
	through(url: string): string;
	cut(): Promise<void>;
	restore(): Promise<void>;
	close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
	const sockets = new Set<net.Socket>();
	const relay = (client: net.Socket) => {
		const upstream = net.connect(target.port, target.host);
		for (const [from, to] of [
			[client, upstream],
			[upstream, client],
		]) {
			sockets.add(from);
			from.pipe(to);
			from.on("error", () => to.destroy());
			from.on("close", () => {
				sockets.delete(from);
				to.destroy();
			});
		}
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
		close: cut,
	};
}

/** Where a `mysql://` or `redis://` URL points. */
export function targetOf(url: string, defaultPort: number): { host: string; port: number } {
	const u = new URL(url);
	return { host: u.hostname, port: Number(u.port || defaultPort) };
}
