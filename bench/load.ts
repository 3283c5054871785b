/** The load generator (autocannon) and what the bench reads from a run. */
import autocannon from "autocannon";

export interface LoadSpec {
	url: string;
	method: "GET" | "POST";
	headers?: Record<string, string>;
	body?: string;
	/** Path of each request, called per request (rotating ids). */
	path?: () => string;
	connections: number;
	/** Seconds, or a fixed number of requests with `amount`. */
	duration?: number;
	amount?: number;
}

export interface LoadResult {
	/** 2xx responses per second over the run: errors never count as throughput. */
	rps: number;
	p50: number;
	p99: number;
	ok: number;
	total: number;
	non2xx: number;
	statusCounts: Record<string, number>;
	errors: number;
	timeouts: number;
	durationSec: number;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
	const request: autocannon.Request = { method: spec.method };
	if (spec.path) {
		const next = spec.path;
		request.setupRequest = req => ({ ...req, path: next() });
	}
	const startedAt = process.hrtime.bigint();
	let lastResponseAt = startedAt;
	const result = await new Promise<autocannon.Result>((resolve, reject) => {
		const tracker = autocannon(
			{
				url: spec.url,
				method: spec.method,
				headers: spec.headers,
				body: spec.body,
				connections: spec.connections,
				pipelining: 1,
				...(spec.amount ? { amount: spec.amount } : { duration: spec.duration ?? 10 }),
				requests: [request],
				timeout: 10,
			},
			(err, res) => (err ? reject(err) : resolve(res)),
		);
		tracker.on("response", () => {
			lastResponseAt = process.hrtime.bigint();
		});
	});
	// With `amount`, autocannon reports whole seconds (it stops on its next 1 s tick): time it here.
	const durationSec = spec.amount ? Number(lastResponseAt - startedAt) / 1e9 : result.duration;
	const statusCounts: Record<string, number> = {};
	for (const [code, s] of Object.entries(result.statusCodeStats || {})) statusCounts[code] = s?.count || 0;
	const ok = result["2xx"];
	const total = ok + result.non2xx;
	return {
		rps: durationSec > 0 ? ok / durationSec : 0,
		p50: result.latency.p50,
		p99: result.latency.p99,
		ok,
		total,
		non2xx: result.non2xx,
		statusCounts,
		errors: result.errors,
		timeouts: result.timeouts,
		durationSec,
	};
}
