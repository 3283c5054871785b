/**
 * The mode rule: sandbox organizations use only test networks, live organizations only main
 * networks, everywhere (payments, links, withdrawals). Pure; throws the API's 400 shape.
 */
import { badRequest } from "../errors";

export type OrganizationMode = "sandbox" | "live";
export const ORGANIZATION_MODES: readonly OrganizationMode[] = ["sandbox", "live"];

/** Field error code when a network does not match the organization's mode. */
export const NETWORK_NOT_ALLOWED_FOR_MODE = "networkNotAllowedForMode";

export const MODE_MESSAGES: Record<OrganizationMode, string> = {
	sandbox: "Sandbox organizations can only use test networks",
	live: "Live organizations can only use main networks",
};

export function isNetworkAllowed(network: { isTestnet: boolean }, mode: OrganizationMode): boolean {
	if (mode === "sandbox") return network.isTestnet === true;
	if (mode === "live") return network.isTestnet === false;
	return false; // an unknown mode is never allowed anything
}

/** 400 with `errors.networkId = "networkNotAllowedForMode"` unless the network fits the mode. */
export function assertNetworkAllowed(network: { isTestnet: boolean }, mode: OrganizationMode, field = "networkId"): void {
	if (isNetworkAllowed(network, mode)) return;
	throw badRequest(MODE_MESSAGES[mode] ?? "Network not allowed", { [field]: NETWORK_NOT_ALLOWED_FOR_MODE });
}
