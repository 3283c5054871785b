/**
 * Localised mail templates (en, es). Each renders to subject, plain text and HTML; every value
 * from `data` is escaped in the HTML. Links point at the configured public URL.
 */
import type { Lang } from "../meta";

export const MAIL_TEMPLATES = ["confirm", "confirmNew", "resetPassword", "loginCode", "registerCode", "accountExists", "emailChanged", "generic"] as const;
export type MailTemplate = (typeof MAIL_TEMPLATES)[number];

export interface RenderedMail {
	subject: string;
	text: string;
	html: string;
}

export class MailTemplateError extends Error {}

interface Content {
	subject: string;
	greeting?: string;
	paragraphs: string[];
	action?: { label: string; url: string };
	code?: string;
	footer: string[];
}

type Data = Record<string, unknown>;

function str(data: Data, key: string, required = true): string {
	const v = data[key];
	if (typeof v === "string" && v.length > 0) return v;
	if (typeof v === "number") return String(v);
	if (required) throw new MailTemplateError(`Template data is missing "${key}"`);
	return "";
}

function link(publicUrl: string, page: string, hash: string): string {
	return `${publicUrl}/${page}?hash=${encodeURIComponent(hash)}`;
}

const IGNORE = {
	en: "If you did not ask for this, you can ignore this email.",
	es: "Si no lo has solicitado, puedes ignorar este correo.",
};

const HELLO = {
	en: (name: string) => (name ? `Hello ${name},` : "Hello,"),
	es: (name: string) => (name ? `Hola ${name}:` : "Hola:"),
};

type Builder = (data: Data, lang: Lang, publicUrl: string) => Content;

const BUILDERS: Record<MailTemplate, Builder> = {
	confirm: (d, lang, url) => {
		const action = link(url, "confirm-email", str(d, "hash"));
		const name = str(d, "firstName", false);
		return lang === "es"
			? {
					subject: "Confirma tu correo electrónico",
					greeting: HELLO.es(name),
					paragraphs: ["Gracias por registrarte. Confirma tu dirección de correo para activar tu cuenta. El enlace caduca en 24 horas."],
					action: { label: "Confirmar correo", url: action },
					footer: [IGNORE.es],
				}
			: {
					subject: "Confirm your email",
					greeting: HELLO.en(name),
					paragraphs: ["Thanks for signing up. Confirm your email address to activate your account. The link expires in 24 hours."],
					action: { label: "Confirm email", url: action },
					footer: [IGNORE.en],
				};
	},
	confirmNew: (d, lang, url) => {
		const action = link(url, "confirm-new-email", str(d, "hash"));
		return lang === "es"
			? {
					subject: "Confirma tu nueva dirección de correo",
					paragraphs: ["Has pedido cambiar el correo de tu cuenta a esta dirección. Confírmalo con el enlace; caduca en 24 horas."],
					action: { label: "Confirmar nuevo correo", url: action },
					footer: [IGNORE.es],
				}
			: {
					subject: "Confirm your new email address",
					paragraphs: ["You asked to change your account's email to this address. Confirm it with the link; it expires in 24 hours."],
					action: { label: "Confirm new email", url: action },
					footer: [IGNORE.en],
				};
	},
	resetPassword: (d, lang, url) => {
		const action = link(url, "password-change", str(d, "hash"));
		return lang === "es"
			? {
					subject: "Restablece tu contraseña",
					paragraphs: ["Hemos recibido una solicitud para restablecer tu contraseña. El enlace funciona una sola vez y caduca en 1 hora."],
					action: { label: "Elegir nueva contraseña", url: action },
					footer: [IGNORE.es],
				}
			: {
					subject: "Reset your password",
					paragraphs: ["We received a request to reset your password. The link works once and expires in 1 hour."],
					action: { label: "Choose a new password", url: action },
					footer: [IGNORE.en],
				};
	},
	loginCode: (d, lang) => {
		const code = str(d, "code");
		return lang === "es"
			? { subject: `Tu código de acceso: ${code}`, paragraphs: ["Usa este código para iniciar sesión. Caduca en 10 minutos."], code, footer: [IGNORE.es] }
			: { subject: `Your sign-in code: ${code}`, paragraphs: ["Use this code to sign in. It expires in 10 minutes."], code, footer: [IGNORE.en] };
	},
	registerCode: (d, lang) => {
		const code = str(d, "code");
		return lang === "es"
			? { subject: `Tu código de registro: ${code}`, paragraphs: ["Usa este código para crear tu cuenta. Caduca en 10 minutos."], code, footer: [IGNORE.es] }
			: { subject: `Your sign-up code: ${code}`, paragraphs: ["Use this code to create your account. It expires in 10 minutes."], code, footer: [IGNORE.en] };
	},
	accountExists: (_d, lang, url) =>
		lang === "es"
			? {
					subject: "Ya tienes una cuenta",
					paragraphs: ["Alguien ha intentado registrarse con esta dirección, pero ya tiene una cuenta. Inicia sesión o restablece tu contraseña si la has olvidado."],
					action: { label: "Iniciar sesión", url: `${url}/sign-in` },
					footer: [IGNORE.es],
				}
			: {
					subject: "You already have an account",
					paragraphs: ["Someone tried to sign up with this address, but it already has an account. Sign in, or reset your password if you forgot it."],
					action: { label: "Sign in", url: `${url}/sign-in` },
					footer: [IGNORE.en],
				},
	emailChanged: (d, lang) => {
		const to = str(d, "newEmail");
		return lang === "es"
			? {
					subject: "El correo de tu cuenta ha cambiado",
					paragraphs: [`El correo de tu cuenta se ha cambiado a ${to}.`, "Si no has sido tú, restablece tu contraseña y contacta con soporte de inmediato."],
					footer: [],
				}
			: {
					subject: "Your account email was changed",
					paragraphs: [`Your account's email was changed to ${to}.`, "If this was not you, reset your password and contact support right away."],
					footer: [],
				};
	},
	generic: d => {
		const body = str(d, "text");
		const actionUrl = str(d, "actionUrl", false);
		return {
			subject: str(d, "subject"),
			paragraphs: body.split(/\n{2,}/),
			action: actionUrl ? { label: str(d, "actionLabel", false) || actionUrl, url: actionUrl } : undefined,
			footer: [],
		};
	},
};

export function escapeHtml(value: string): string {
	return value.replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

function toText(c: Content): string {
	const parts: string[] = [];
	if (c.greeting) parts.push(c.greeting);
	parts.push(...c.paragraphs);
	if (c.code) parts.push(c.code);
	if (c.action) parts.push(`${c.action.label}: ${c.action.url}`);
	parts.push(...c.footer);
	return `${parts.join("\n\n")}\n`;
}

function toHtml(c: Content, lang: Lang): string {
	const p = (s: string) => `<p style="margin:0 0 16px">${escapeHtml(s).replace(/\n/g, "<br>")}</p>`;
	const body: string[] = [];
	if (c.greeting) body.push(p(c.greeting));
	body.push(...c.paragraphs.map(p));
	if (c.code) body.push(`<p style="margin:0 0 16px;font-size:28px;letter-spacing:6px;font-weight:bold">${escapeHtml(c.code)}</p>`);
	if (c.action) {
		const href = escapeHtml(c.action.url);
		body.push(`<p style="margin:0 0 16px"><a href="${href}" style="background:#111;color:#fff;padding:10px 16px;text-decoration:none;border-radius:4px">${escapeHtml(c.action.label)}</a></p>`);
		body.push(`<p style="margin:0 0 16px;font-size:12px;color:#555">${escapeHtml(c.action.url)}</p>`);
	}
	body.push(...c.footer.map(s => `<p style="margin:0 0 16px;font-size:12px;color:#555">${escapeHtml(s)}</p>`));
	return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${escapeHtml(c.subject)}</title></head><body style="font-family:Arial,sans-serif;color:#111;max-width:560px;margin:24px auto">${body.join("")}</body></html>`;
}

/** Renders a template; unknown languages fall back to English. */
export function renderMail(template: MailTemplate, data: Data, lang: string | undefined, publicUrl: string): RenderedMail {
	const builder = BUILDERS[template];
	if (!builder) throw new MailTemplateError(`Unknown template "${template}"`);
	const l: Lang = lang === "es" ? "es" : "en";
	const content = builder(data, l, publicUrl.replace(/\/+$/, ""));
	// Subjects are one line whatever the data holds (header injection).
	const subject = content.subject.replace(/[\r\n]+/g, " ").trim();
	return { subject, text: toText(content), html: toHtml({ ...content, subject }, l) };
}
