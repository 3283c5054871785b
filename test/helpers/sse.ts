/**
 * A server-sent event stream read as a browser's EventSource would (one connection, no reconnect):
 * the pay page's `/pay/:slug/events`. Tests await events under generous bounds.
 */
import http from "node:http";
import { sseParser } from "../../bench/sse-client";

export interface SseEvent {
	event: string;
	data: any;
}

export interface SseStream {
	status: number;
	events: SseEvent[];
	/** The server ended the stream. */
	ended: boolean;
	/** Resolves with the first event (seen or to come) that matches; rejects after `timeoutMs`. */
	next(match: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
	close(): void;
}

export function openSse(url: string): Promise<SseStream> {
	return new Promise((resolve, reject) => {
		const req = http.get(url, { headers: { Accept: "text/event-stream" } }, res => {
			let waiters: Array<() => boolean> = [];
			const stream: SseStream = {
				status: res.statusCode ?? 0,
				events: [],
				ended: false,
				next(match, timeoutMs = 30_000) {
					return new Promise((ok, fail) => {
						const timer = setTimeout(() => fail(new Error(`No matching event within ${timeoutMs} ms; got ${JSON.stringify(stream.events.map(e => e.data?.transaction?.status ?? e.event))}`)), timeoutMs);
						const check = () => {
							const found = stream.events.find(match);
							if (!found) return false;
							clearTimeout(timer);
							ok(found);
							return true;
						};
						if (!check()) waiters.push(check);
					});
				},
				close: () => req.destroy(),
			};
			res.setEncoding("utf8");
			res.on(
				"data",
				sseParser((event, data) => {
					stream.events.push({ event, data: JSON.parse(data) });
					waiters = waiters.filter(w => !w());
				}),
			);
			res.on("end", () => {
				stream.ended = true;
			});
			res.on("error", () => undefined);
			resolve(stream);
		});
		req.on("error", reject);
	});
}
