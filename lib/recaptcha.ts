/**
 * Score-based bot check (reCAPTCHA v3 siteverify protocol) for the operations the spec names.
 * The verify URL is configurable so tests run a local verify server.
 */
import { badRequest } from "./errors";

export interface RecaptchaConfig {
	secret: string;
	verifyUrl: string;
	minScore: number;
}

const failed = () => badRequest("Bot check failed", { recaptcha: "recaptchaFailed" });

export async function verifyRecaptcha(cfg: RecaptchaConfig, token: string | undefined, ip?: string): Promise<void> {
	if (!token) throw failed();
	const form = new URLSearchParams({ secret: cfg.secret, response: token });
	if (ip) form.set("remoteip", ip);
	let result: { success?: boolean; score?: number };
	try {
		const res = await fetch(cfg.verifyUrl, {
			method: "POST",
			headers: { "Content-Type": "application/x-www-form-urlencoded" },
			body: form.toString(),
			signal: AbortSignal.timeout(5000),
		});
		if (!res.ok) throw failed();
		result = (await res.json()) as typeof result;
	} catch {
		// An unreachable verifier fails closed: the operation is refused, never let through unchecked.
		throw failed();
	}
	if (!result.success) throw failed();
	if (typeof result.score === "number" && result.score < cfg.minScore) throw failed();
}
