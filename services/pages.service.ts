/**
 * The pages that are not the API, on the gateway's port: the hosted pay page at /pay (document,
 * hashed assets, status, server-sent events; docs/pay-page.md, lib/pay-page/) and the API
 * reference page at /docs (docs/openapi.md, lib/openapi/docs-page.ts), each with its own CSP.
 *
 * It has no HTTP server of its own: when it starts, it mounts its routes on the gateway of its
 * node (services/api.service.ts), so there is one port, and the pages share the gateway's per-IP
 * limits and error shape. It therefore runs where `api` runs (SERVICES=api,pages); a gateway
 * without it answers /pay and /docs with 404. See docs/gateway.md "Layout".
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context, Service, ServiceSchema } from "moleculer";
import { appOf } from "../lib/app";
import { serviceUnavailable } from "../lib/errors";
import { requestHeader, statusOf } from "../lib/http-request";
import { payAssets } from "../lib/pay-page/assets";
import { notFoundPage, payPageHeaders, payPageShell, pickPageLang } from "../lib/pay-page/html";
import { PayStreamHub } from "../lib/pay-page/live";
import { CHECKOUTS_CHANGED_EVENT, type CheckoutsChanged } from "../lib/payments/checkout-changes";
import { sendDocsAsset, sendDocsPage } from "../lib/openapi/docs-page";
import type { StatusPayload } from "../web/pay/state";

/** What the pages use of the gateway they are mounted on (services/api.service.ts). */
export interface PageGateway {
	addRoute(route: Record<string, unknown>): unknown;
	/** The per-IP limit of anonymous callers (429 with the limit headers). */
	anonymousLimit(req: IncomingMessage, res: ServerResponse): Promise<void>;
	/** The error shape `{ statusCode, message, error }`, logged and reported like the API's. */
	sendErrorBody(req: IncomingMessage, res: ServerResponse, err: unknown): void;
}

interface PageRequest extends IncomingMessage {
	$params?: Record<string, unknown>;
	query?: Record<string, unknown>;
}

type Next = (err?: unknown) => void;

interface PagesVars {
	/** Open server-sent event streams of the pay page, woken by checkout changes, ended when the service stops. */
	payStreams: PayStreamHub;
	gateway: PageGateway;
}

interface PagesMethods {
	payNotFound(req: PageRequest, res: ServerResponse): Promise<void>;
	payPageDocument(req: PageRequest, res: ServerResponse): Promise<void>;
	payAsset(req: PageRequest, res: ServerResponse): Promise<void>;
	payStatusJson(req: PageRequest, res: ServerResponse): Promise<void>;
	payEvents(req: PageRequest, res: ServerResponse): Promise<void>;
}

type PagesThis = Service<Record<string, any>> & PagesVars & PagesMethods;

const API_PREFIX = "/api/v1";
/** Streams end after this long; the browser's EventSource reconnects (bounds a stream's life). */
const PAY_EVENTS_MAX_MS = 5 * 60_000;
const PAY_EVENTS_HEARTBEAT_MS = 15_000;
/** Open event streams per gateway node; more get 503 and the page polls instead. */
const PAY_EVENTS_MAX_STREAMS = 2_000;
const ASSET_NAME = /^[A-Za-z0-9_-]{1,64}\.(js|css)$/;

function pageLang(req: PageRequest) {
	return pickPageLang(typeof req.query?.lang === "string" ? req.query.lang : undefined, requestHeader(req, "accept-language"));
}

/**
 * The pages' moleculer-web routes. Their handlers run with the gateway as `this`, so they close
 * over the pages service; nothing of it is read until a request comes (lib/openapi/generate.ts
 * reads the route table without a service).
 */
export function pageRoutes(svc: PagesThis): Array<{ name: string; path: string; aliases: Record<string, unknown> } & Record<string, unknown>> {
	type Handler = "payAsset" | "payPageDocument" | "payStatusJson" | "payEvents";
	const handle = (name: Handler) => (req: PageRequest, res: ServerResponse, next: Next) => {
		svc[name](req, res).catch(next);
	};
	return [
		{
			// The hosted pay page (docs/pay-page.md): HTML, hashed assets, status and events.
			name: "pay",
			path: "/pay",
			mappingPolicy: "restrict",
			authentication: false,
			authorization: false,
			bodyParsers: { json: false, urlencoded: false },
			// A handler that fails hands its error to `next` (moleculer-web then calls onError below).
			aliases: {
				"GET /assets/:file": handle("payAsset"),
				"GET /:slug": handle("payPageDocument"),
				"GET /:slug/checkout": handle("payPageDocument"),
				"GET /:slug/status": handle("payStatusJson"),
				"GET /:slug/events": handle("payEvents"),
			},
			onError(req: PageRequest, res: ServerResponse, err: unknown) {
				if (statusOf(err) === 404 && !res.headersSent) return void svc.payNotFound(req, res);
				svc.gateway.sendErrorBody(req, res, err);
			},
		},
		{
			// The API reference page (docs/openapi.md): Swagger UI over GET /api/v1/openapi.json.
			name: "docs",
			path: "/docs",
			mappingPolicy: "restrict",
			authentication: false,
			authorization: false,
			bodyParsers: { json: false, urlencoded: false },
			aliases: {
				"GET /"(_req: PageRequest, res: ServerResponse) {
					sendDocsPage(res);
				},
				"GET /assets/:file"(req: PageRequest, res: ServerResponse, next: Next) {
					try {
						sendDocsAsset(req, res, String(req.$params?.file ?? ""));
					} catch (err) {
						next(err);
					}
				},
			},
		},
	];
}

const PagesService: ServiceSchema<Record<string, any>, PagesMethods & Record<string, any>, PagesVars> = {
	name: "pages",

	created(this: PagesThis) {
		const app = appOf(this.broker);
		this.payStreams = new PayStreamHub({
			pollMs: app.config.payPage.eventsPollMs,
			readMany: async transactionIds => (await this.broker.call("links.payStatuses", { transactionIds })) as StatusPayload[],
			heartbeatMs: PAY_EVENTS_HEARTBEAT_MS,
			maxMs: PAY_EVENTS_MAX_MS,
			// Transient (database, a service restarting): the next wake or poll tries again.
			onReadError: err => this.logger.debug("Pay page event read failed:", (err as Error)?.message),
		});
	},

	/** Every local service has been created (not started): the gateway's routes are mounted before its port opens. */
	started(this: PagesThis) {
		const gateway = this.broker.getLocalService("api") as unknown as PageGateway | undefined;
		if (!gateway || typeof gateway.addRoute !== "function") {
			this.logger.warn("No gateway (service api) on this node: /pay and /docs are not served here");
			return;
		}
		this.gateway = gateway;
		for (const route of pageRoutes(this)) gateway.addRoute(route);
	},

	/** Open event streams would hold the HTTP server's close: they end first (the page reconnects elsewhere). */
	stopped(this: PagesThis) {
		this.payStreams.closeAll();
	},

	events: {
		/** Broadcast after a checkout, link or intent change committed: only the streams it names re-read. */
		[CHECKOUTS_CHANGED_EVENT](this: PagesThis, ctx: Context<CheckoutsChanged>) {
			this.payStreams.wake(ctx.params || {});
		},
	},

	methods: {
		async payNotFound(this: PagesThis, req: PageRequest, res: ServerResponse) {
			const assets = await payAssets().catch(() => null);
			res.writeHead(404, { ...payPageHeaders(), "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
			res.end(notFoundPage(pageLang(req), assets?.styleUrl ?? null));
		},

		async payPageDocument(this: PagesThis, req: PageRequest, res: ServerResponse) {
			await this.gateway.anonymousLimit(req, res);
			const slug = String(req.$params?.slug ?? "");
			let page: { link: { title: string } };
			try {
				page = (await this.broker.call("links.payPage", { slug })) as typeof page;
			} catch (err) {
				if (statusOf(err) === 404) return this.payNotFound(req, res);
				throw err;
			}
			const assets = await payAssets();
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
			res.end(payPageShell({ lang: pageLang(req), title: page.link.title, scriptUrl: assets.scriptUrl, styleUrl: assets.styleUrl, boot: { apiBase: API_PREFIX, page } }));
		},

		/** Hashed names never change content: cached for a year, gzip when the browser takes it. */
		async payAsset(this: PagesThis, req: PageRequest, res: ServerResponse) {
			const name = String(req.$params?.file ?? "");
			const assets = await payAssets();
			const file = ASSET_NAME.test(name) ? assets.files.get(name) : undefined;
			if (!file) return this.payNotFound(req, res);
			const gzip = /\bgzip\b/.test(requestHeader(req, "accept-encoding") || "");
			res.writeHead(200, {
				"Content-Type": file.contentType,
				"Cache-Control": "public, max-age=31536000, immutable",
				"X-Content-Type-Options": "nosniff",
				Vary: "Accept-Encoding",
				...(gzip ? { "Content-Encoding": "gzip" } : {}),
				"Content-Length": String((gzip ? file.gzip : file.body).length),
			});
			res.end(gzip ? file.gzip : file.body);
		},

		async payStatusJson(this: PagesThis, req: PageRequest, res: ServerResponse) {
			await this.gateway.anonymousLimit(req, res);
			const status = await this.broker.call("links.payStatus", { slug: String(req.$params?.slug ?? ""), transactionId: String(req.query?.transaction ?? "") });
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" });
			res.end(JSON.stringify(status));
		},

		/**
		 * Server-sent events of one checkout: `event: status` with the pay status whenever it
		 * changes, a comment as heartbeat, the end after a final state. Re-read when
		 * `payments.checkouts.changed` names it (whichever node the watcher or the credit ran on),
		 * at its expiry, and by the safety-net poll (PAY_EVENTS_POLL_MS): lib/pay-page/live.ts.
		 */
		async payEvents(this: PagesThis, req: PageRequest, res: ServerResponse) {
			await this.gateway.anonymousLimit(req, res);
			if (this.payStreams.size >= PAY_EVENTS_MAX_STREAMS) throw serviceUnavailable();
			const params = { slug: String(req.$params?.slug ?? ""), transactionId: String(req.query?.transaction ?? "") };
			const read = async () => (await this.broker.call("links.payStatus", params)) as StatusPayload;
			// A wrong slug or transaction is answered before the stream opens (404, no reconnect loop).
			const first = await read();
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "keep-alive", "X-Accel-Buffering": "no" });
			res.socket?.setTimeout(0);
			req.socket?.setNoDelay(true);
			req.on("close", this.payStreams.open(res, first, read));
		},
	},
};

export default PagesService;
