import { pickLang, registerTranslations, SUPPORTED_LANGS, translate, untranslated } from "../../lib/i18n";
import { STATUS_PHRASES } from "../../lib/errors";

describe("i18n", () => {
	it("picks English or Spanish from x-custom-lang, defaulting to English", () => {
		expect(SUPPORTED_LANGS).toEqual(["en", "es"]);
		const cases: Array<[string | string[] | undefined, string]> = [
			["es", "es"],
			["ES", "es"],
			[" es-MX ", "es"],
			["es_AR", "es"],
			["es;q=0.8", "es"],
			[["es", "en"], "es"],
			["en", "en"],
			["en-GB", "en"],
			["fr", "en"],
			["spanish", "en"],
			["", "en"],
			[undefined, "en"],
			[[], "en"],
			["e", "en"],
		];
		for (const [header, lang] of cases) expect({ header, lang: pickLang(header) }).toEqual({ header, lang });
	});

	it("translates the gateway's messages and leaves English and unknown messages alone", () => {
		expect(translate("Not Found", "es")).toBe("No encontrado");
		expect(translate("ThrottlerException: Too Many Requests", "es")).toBe("ThrottlerException: Demasiadas solicitudes");
		expect(translate("Not Found", "en")).toBe("Not Found");
		expect(translate("Not Found", undefined)).toBe("Not Found");
		expect(translate("Something nobody translated", "es")).toBe("Something nobody translated");
	});

	it("has Spanish for every status phrase and gateway message", () => {
		const messages = [
			...Object.values(STATUS_PHRASES),
			"Validation failed",
			"Invalid JSON body",
			"Request body must be a JSON object",
			"Content-Type must be application/json",
			"Content-Type must be multipart/form-data",
			"Unsupported Content-Encoding",
			"Unsupported charset",
			"Invalid URL encoding",
			"Malformed multipart body",
			"Token expired",
			"Invalid token",
			"Session ended",
			"Invalid API key",
			"This operation requires an API key",
			"Insufficient role",
			"Origin not allowed",
			"ThrottlerException: Too Many Requests",
			"Bot check failed",
		];
		expect(untranslated(messages, "es")).toEqual([]);
		expect(untranslated(["Not Found"], "en")).toEqual([]);
		expect(untranslated(["Nobody translated this"], "es")).toEqual(["Nobody translated this"]);
	});

	it("lets services register their own messages, including templates with placeholders", () => {
		registerTranslations("es", {
			"Widget exploded": "El widget explotó",
			"Cannot {action} an intent in state {state}": "No se puede {action} un intento en estado {state}",
			"Amount must be at least {min} (got {amount})": "El importe debe ser al menos {min} (recibido {amount})",
		});
		expect(translate("Widget exploded", "es")).toBe("El widget explotó");
		expect(translate("Cannot cancel an intent in state succeeded", "es")).toBe("No se puede cancel un intento en estado succeeded");
		expect(translate("Amount must be at least 0.01 (got 0.001)", "es")).toBe("El importe debe ser al menos 0.01 (recibido 0.001)");
		// Template literals are matched literally (the parentheses and dot are not regex syntax).
		expect(translate("Amount must be at least 0.01 got 0.001", "es")).toBe("Amount must be at least 0.01 got 0.001");
		expect(translate("Cannot cancel an intent in state ", "es")).toBe("Cannot cancel an intent in state ");
		// A later registration replaces an earlier one.
		registerTranslations("es", { "Widget exploded": "El widget estalló" });
		expect(translate("Widget exploded", "es")).toBe("El widget estalló");
	});

	it("never answers with inherited object properties", () => {
		for (const message of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
			expect(translate(message, "es")).toBe(message);
		}
		registerTranslations("es", { ["__proto__"]: "x" } as Record<string, string>);
		expect(translate("valueOf", "es")).toBe("valueOf");
	});
});
