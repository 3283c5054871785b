/**
 * Languages of response messages, chosen per request by `x-custom-lang` ("es", "es-MX", ...).
 * Messages are written in English in the code; this table gives their translations. Field
 * error codes (`invalidHash`, `tooManyEmails`, ...) are codes, never translated.
 * Unknown languages and untranslated messages fall back to English.
 */
import type { Lang } from "./meta";

export const SUPPORTED_LANGS: Lang[] = ["en", "es"];

export function pickLang(header: string | string[] | undefined): Lang {
	const raw = (Array.isArray(header) ? header[0] : header || "").trim().toLowerCase();
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

const TABLES: Record<Lang, Record<string, string>> = { en: {}, es: { ...ES } };

/** Services register the translations of their own messages (keeps each service self-contained). */
export function registerTranslations(lang: Exclude<Lang, "en">, table: Record<string, string>): void {
	Object.assign(TABLES[lang], table);
}

export function translate(message: string, lang: Lang | undefined): string {
	if (!lang || lang === "en") return message;
	return TABLES[lang][message] ?? message;
}

/** For tests and docs: messages that have no translation in a language. */
export function untranslated(messages: string[], lang: Lang): string[] {
	return messages.filter(m => TABLES[lang][m] === undefined);
}
