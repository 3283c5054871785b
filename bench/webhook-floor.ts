/**
 * The floor of the webhook-delivery bench (bench/webhooks.ts): a bare Node process that sends N
 * webhooks to the same receiver with the gateway's own sending code (`sendWebhook` of
 * lib/webhooks/sender.ts: keep-alive agent, same headers, same timeout handling) and signature
 * (`signWebhookBody`), at the same concurrency, with no database and no queue. Each request is
 * the real event body the gateway sent (same bytes, same size) with a new event id, signed anew.
 *
 * IPC: parent sends { url, body, secret, events, concurrency, timeoutMs }; the floor answers
 * { done: { ok, failed, seconds, p50, p99, firstError } } and exits.
 */
import crypto from "node:crypto";
import { sendWebhook } from "../lib/webhooks/sender";
import { signWebhookBody } from "../lib/webhooks/signature";

interface Job {
	url: string;
	body: string;
	secret: string;
	events: number;
	concurrency: number;
	timeoutMs: number;
}

function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return 0;
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function run(job: Job) {
	const template = JSON.parse(job.body) as { id?: unknown };
	const oldId = typeof template.id === "string" ? template.id : null;
	const durations: number[] = [];
	let ok = 0;
	let failed = 0;
	let firstError: string | null = null;
	let next = 0;
	const started = process.hrtime.bigint();
	const worker = async () => {
		while (next < job.events) {
			next++;
			const id = crypto.randomUUID();
			// Same length as the stored id (a UUID), so the body keeps its size.
			const body = oldId ? job.body.replace(oldId, id) : job.body;
			const r = await sendWebhook({
				url: job.url,
				body,
				signature: signWebhookBody(body, job.secret),
				eventId: id,
				timeoutMs: job.timeoutMs,
				enforcePublicUrls: false,
				responseMaxChars: 2000,
			});
			durations.push(r.durationMs);
			if (r.statusCode === 200) ok++;
			else {
				failed++;
				firstError ??= r.error ?? `HTTP ${r.statusCode}`;
			}
		}
	};
	await Promise.all(Array.from({ length: job.concurrency }, worker));
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;
	durations.sort((a, b) => a - b);
	return { ok, failed, seconds, p50: percentile(durations, 50), p99: percentile(durations, 99), firstError };
}

process.once("message", (job: Job) => {
	run(job).then(
		done => {
			process.send?.({ done }, () => process.exit(0));
		},
		err => {
			process.send?.({ error: err instanceof Error ? err.message : String(err) }, () => process.exit(1));
		},
	);
});
process.send?.({ ready: true });
