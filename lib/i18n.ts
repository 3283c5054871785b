/**
 * Languages of response messages, chosen per request by `x-custom-lang` ("es", "es-MX", ...).
 * Messages are written in English in the code; this table gives their translations. Field
 * error codes (`invalidHash`, `tooManyEmails`, ...) are codes, never translated.
 * Unknown languages and untranslated messages fall back to English.
 */
import type { Lang } from "./meta";

export const SUPPORTED_LANGS: Lang[] = ["en", "es"];

export function pickLang(header: string | string[] | undefined): Lang {
	const first = Array.isArray(header) ? header[0] : header;
	const raw = (typeof first === "string" ? first : "").trim().toLowerCase();
	const base = raw.split(/[-_,;]/)[0];
	return (SUPPORTED_LANGS as string[]).includes(base) ? (base as Lang) : "en";
}

const ES: Record<string, string> = {
	"Bad Request": "Solicitud incorrecta",
	Unauthorized: "No autorizado",
	Forbidden: "Prohibido",
	"Not Found": "No encontrado",
	"Internal Server Error": "Error interno del servidor",
	"Service Unavailable": "Servicio no disponible",
	"Payload Too Large": "Contenido demasiado grande",
	"Unsupported Media Type": "Tipo de contenido no admitido",
	"Token expired": "Token caducado",
	"Invalid token": "Token no válido",
	"Invalid API key": "Clave de API no válida",
	"Invalid email or password": "Correo electrónico o contraseña no válidos",
	"Email not confirmed": "Correo electrónico no confirmado",
	"Invalid JSON body": "Cuerpo JSON no válido",
	"Validation failed": "La validación ha fallado",
	"ThrottlerException: Too Many Requests": "ThrottlerException: Demasiadas solicitudes",
	"Too many login attempts": "Demasiados intentos de inicio de sesión",
	"Too many emails": "Demasiados correos electrónicos",
	"Invalid or expired code": "Código no válido o caducado",
	"Invalid or expired link": "Enlace no válido o caducado",
	"Email already in use": "El correo electrónico ya está en uso",
	"Account not found": "Cuenta no encontrada",
	"Organization not found": "Organización no encontrada",
	"API key not found": "Clave de API no encontrada",
	"User not found": "Usuario no encontrado",
	"File not found": "Archivo no encontrado",
	"Route not found": "Ruta no encontrada",
	"Bot check failed": "La verificación anti-bots ha fallado",
	"Incorrect old password": "La contraseña anterior es incorrecta",
	"File is too large": "El archivo es demasiado grande",
	"File type not allowed": "Tipo de archivo no permitido",
	"A file is required": "Se requiere un archivo",
	"Webhook URL not configured for this API key": "URL de webhook no configurada para esta clave de API",
	"Invalid webhook signature": "Firma de webhook no válida",
	"Insufficient role": "Rol insuficiente",
	"Session ended": "Sesión finalizada",
};

/** Messages of the gateway itself (lib/errors, body and header checks). */
const ES_GATEWAY: Record<string, string> = {
	"Method Not Allowed": "Método no permitido",
	Conflict: "Conflicto",
	"Unprocessable Entity": "Entidad no procesable",
	"Bad Gateway": "Pasarela incorrecta",
	"Request Timeout": "Tiempo de espera de la solicitud agotado",
	"Request Header Fields Too Large": "Campos de cabecera de la solicitud demasiado grandes",
	"Too Many Requests": "Demasiadas solicitudes",
	"Gateway Timeout": "Tiempo de espera de la pasarela agotado",
	"Request body must be a JSON object": "El cuerpo de la solicitud debe ser un objeto JSON",
	"Content-Type must be application/json": "Content-Type debe ser application/json",
	"Content-Type must be multipart/form-data": "Content-Type debe ser multipart/form-data",
	"Unsupported Content-Encoding": "Content-Encoding no admitido",
	"Unsupported charset": "Juego de caracteres no admitido",
	"Malformed multipart body": "Cuerpo multipart mal formado",
	"Invalid URL encoding": "Codificación de URL no válida",
	"This operation requires an API key": "Esta operación requiere una clave de API",
	"Origin not allowed": "Origen no permitido",
};

/**
 * Exact messages, plus templates: a key with `{name}` placeholders ("Cannot cancel an intent in
 * state {state}") matches messages that differ only there, and the captured values are put into
 * the translation's placeholders of the same name.
 */
interface Table {
	exact: Map<string, string>;
	templates: Array<{ re: RegExp; names: string[]; translation: string }>;
}

const TABLES: Record<Exclude<Lang, "en">, Table> = { es: { exact: new Map(), templates: [] } };

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

function addEntry(table: Table, message: string, translation: string): void {
	const names: string[] = [];
	const parts = message.split(PLACEHOLDER);
	if (parts.length === 1) {
		table.exact.set(message, translation);
		return;
	}
	// split() with a capture group alternates literal text and placeholder names.
	let pattern = "^";
	parts.forEach((part, i) => {
		if (i % 2 === 1) {
			names.push(part);
			pattern += "(.+?)";
		} else pattern += part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
	});
	table.templates = table.templates.filter(t => t.re.source !== pattern + "$");
	table.templates.push({ re: new RegExp(pattern + "$", "s"), names, translation });
}

/** Services register the translations of their own messages (keeps each service self-contained). */
export function registerTranslations(lang: Exclude<Lang, "en">, table: Record<string, string>): void {
	const target = TABLES[lang];
	if (!target) return;
	for (const [message, translation] of Object.entries(table)) {
		if (typeof translation === "string") addEntry(target, message, translation);
	}
}

registerTranslations("es", ES);
registerTranslations("es", ES_GATEWAY);

function lookup(message: string, lang: Exclude<Lang, "en">): string | undefined {
	const table = TABLES[lang];
	if (!table) return undefined;
	const exact = table.exact.get(message);
	if (exact !== undefined) return exact;
	// Templates are for short messages; a long one is not worth the regex work.
	if (message.length > 2000) return undefined;
	for (const t of table.templates) {
		const m = t.re.exec(message);
		if (!m) continue;
		const values: Record<string, string> = {};
		t.names.forEach((name, i) => (values[name] = m[i + 1]));
		return t.translation.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
	}
	return undefined;
}

export function translate(message: string, lang: Lang | undefined): string {
	if (!lang || lang === "en" || typeof message !== "string") return message;
	return lookup(message, lang) ?? message;
}

/** For tests and docs: messages that have no translation in a language. */
export function untranslated(messages: string[], lang: Lang): string[] {
	if (lang === "en") return [];
	return messages.filter(m => lookup(m, lang) === undefined);
}
