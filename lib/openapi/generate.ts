/**
 * The document from the gateway's real definitions: services/api.service.ts's route table, the
 * pages' routes it mounts (services/pages.service.ts) and the
 * schemas of the services that publish REST routes (watchers, sweepers and mail publish none; the
 * route coverage test, test/lib/openapi/routes.test.ts, fails if one starts to).
 * `npm run openapi` writes it to docs/openapi.json.
 */
import fs from "node:fs";
import path from "node:path";
import type { ServiceSchema } from "moleculer";
import ApiService from "../../services/api.service";
import { pageRoutes } from "../../services/pages.service";
import AuthService from "../../services/auth.service";
import DashboardService from "../../services/dashboard.service";
import FilesService from "../../services/files.service";
import IntentsService from "../../services/intents.service";
import KeysService from "../../services/keys.service";
import LinksService from "../../services/links.service";
import NetworksService from "../../services/networks.service";
import OrganizationsService from "../../services/organizations.service";
import PricingService from "../../services/pricing.service";
import TransactionsService from "../../services/transactions.service";
import UsersService from "../../services/users.service";
import WebhooksService from "../../services/webhooks.service";
import WithdrawalsService from "../../services/withdrawals.service";
import { buildOpenApiDocument, gatewayRouteTable, type BuildInput } from "./document";
import pkg from "../../package.json";

export const DOCUMENT_FILE = path.join(__dirname, "..", "..", "docs", "openapi.json");

export function gatewayDefinitions(): BuildInput {
	const services = [
		ApiService,
		AuthService,
		DashboardService,
		FilesService,
		IntentsService,
		KeysService,
		LinksService,
		NetworksService,
		OrganizationsService,
		PricingService,
		TransactionsService,
		UsersService,
		WebhooksService,
		WithdrawalsService,
	] as unknown as ServiceSchema[];
	// The pages' routes are mounted on the gateway when the pages service starts; only their paths are read here.
	const gatewayRoutes = [...(ApiService.settings as { routes: BuildInput["gatewayRoutes"] }).routes, ...pageRoutes(undefined as never)];
	// The api service's own actions are reached through the v1 route's aliases, not autoAliases.
	return { gatewayRoutes, services: services.filter(s => s.name !== "api"), apiActions: ApiService.actions as BuildInput["apiActions"], version: pkg.version };
}

export function generateDocument(): Record<string, unknown> {
	return buildOpenApiDocument(gatewayDefinitions());
}

export function routeTable() {
	return gatewayRouteTable(gatewayDefinitions());
}

/** The document as written to docs/openapi.json: tab-indented JSON and a final newline. */
export function serializeDocument(doc: Record<string, unknown>): string {
	return `${JSON.stringify(doc, null, "\t")}\n`;
}

if (require.main === module) {
	fs.writeFileSync(DOCUMENT_FILE, serializeDocument(generateDocument()));
	console.log(`Wrote ${path.relative(process.cwd(), DOCUMENT_FILE)}`);
}
