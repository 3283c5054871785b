/**
 * Outgoing mail. `mail.send({ to, template, data, lang })` renders a localised template and
 * delivers it: through Mailgun (mailgun.js) when MAILGUN_API_KEY and MAILGUN_DOMAIN are set,
 * otherwise as a JSON file in the outbox folder DATA_DIR/mail. Internal only (no `rest`).
 * Callers treat a failure as non-fatal; data (codes, links) is never logged.
 */
import path from "node:path";
import type { Context, Service, ServiceSchema } from "moleculer";
import FormData from "form-data";
import Mailgun from "mailgun.js";
import type { IMailgunClient } from "mailgun.js/Interfaces";
import { appOf } from "../lib/app";
import { badRequest, httpError } from "../lib/errors";
import type { AuthMeta } from "../lib/meta";
import { MAIL_TEMPLATES, MailTemplate, MailTemplateError, renderMail } from "../lib/mail/templates";
import { writeOutboxMail } from "../lib/mail/outbox";
import { registerTranslations } from "../lib/i18n";
import { EMAIL_RULE } from "../lib/users/email";

registerTranslations("es", { "Mail delivery failed": "No se pudo enviar el correo" });

interface SendParams {
	to: string;
	template: MailTemplate;
	data?: Record<string, unknown>;
	lang?: string;
}

interface MailVars {
	mailgun: IMailgunClient | null;
}

type MailSettings = Record<string, never>;
type MailThis = Service<MailSettings> & MailVars;

const MailService: ServiceSchema<MailSettings, Record<string, never>, MailVars> = {
	name: "mail",

	actions: {
		send: {
			// Internal: reachable by other services, never published through the gateway.
			visibility: "public",
			auth: "public",
			params: {
				$$strict: "remove",
				to: EMAIL_RULE,
				template: { type: "enum", values: [...MAIL_TEMPLATES] },
				data: { type: "object", optional: true },
				lang: { type: "string", optional: true, max: 10 },
			},
			// Params carry one-time codes and link hashes: keep them out of traces.
			tracing: { tags: { params: ["to", "template", "lang"] } },
			async handler(this: MailThis, ctx: Context<SendParams, AuthMeta>) {
				const { config, clock } = appOf(this.broker);
				const data = ctx.params.data || {};
				const lang = ctx.params.lang || ctx.meta.lang || "en";
				let rendered;
				try {
					rendered = renderMail(ctx.params.template, data, lang, config.publicUrl);
				} catch (err) {
					if (err instanceof MailTemplateError) throw badRequest(err.message, { data: "invalidTemplateData" });
					throw err;
				}
				if (this.mailgun && config.mailgun) {
					try {
						const res = await this.mailgun.messages.create(config.mailgun.domain, {
							from: config.mailgun.from,
							to: [ctx.params.to],
							subject: rendered.subject,
							text: rendered.text,
							html: rendered.html,
						});
						return { transport: "mailgun", id: res.id ?? null };
					} catch (err: any) {
						// Status and template only: the message and the API key stay out of the log.
						this.logger.warn(`Mailgun delivery failed (template ${ctx.params.template}, status ${err?.status ?? "n/a"})`);
						throw httpError(503, "Mail delivery failed");
					}
				}
				const file = await writeOutboxMail(path.join(config.dataDir, "mail"), {
					to: ctx.params.to,
					subject: rendered.subject,
					text: rendered.text,
					html: rendered.html,
					template: ctx.params.template,
					data,
					createdAt: clock.now().toISOString(),
				});
				return { transport: "outbox", id: file };
			},
		},
	},

	created(this: MailThis) {
		const { config } = appOf(this.broker);
		this.mailgun = config.mailgun
			? new Mailgun(FormData).client({
					username: "api",
					key: config.mailgun.apiKey,
					url: config.mailgun.url || undefined,
					timeout: 10_000,
				})
			: null;
	},
};

export default MailService;
