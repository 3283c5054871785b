/**
 * The document the gateway serves at GET /api/v1/openapi.json: docs/openapi.json, which
 * `npm run openapi` generates (lib/openapi/generate.ts) and a test keeps equal to the generated one.
 * Imported, so the build carries it into dist/ beside the code.
 */
import document from "../../docs/openapi.json";

export const OPENAPI_DOCUMENT: Readonly<Record<string, unknown>> = document as Record<string, unknown>;
