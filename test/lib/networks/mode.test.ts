import { NETWORK_NOT_ALLOWED_FOR_MODE, assertNetworkAllowed, isNetworkAllowed, OrganizationMode } from "../../../lib/networks/mode";

describe("mode rule", () => {
	it("lets sandbox organizations use test networks only and live ones main networks only", () => {
		expect(isNetworkAllowed({ isTestnet: true }, "sandbox")).toBe(true);
		expect(isNetworkAllowed({ isTestnet: false }, "sandbox")).toBe(false);
		expect(isNetworkAllowed({ isTestnet: false }, "live")).toBe(true);
		expect(isNetworkAllowed({ isTestnet: true }, "live")).toBe(false);
	});

	it("allows nothing for an unknown mode or a network without a boolean flag", () => {
		expect(isNetworkAllowed({ isTestnet: true }, "test" as OrganizationMode)).toBe(false);
		expect(isNetworkAllowed({ isTestnet: false }, "" as OrganizationMode)).toBe(false);
		expect(isNetworkAllowed({ isTestnet: 1 as unknown as boolean }, "sandbox")).toBe(false);
	});

	it("throws a 400 naming the field with networkNotAllowedForMode", () => {
		expect(() => assertNetworkAllowed({ isTestnet: true }, "sandbox")).not.toThrow();
		expect(() => assertNetworkAllowed({ isTestnet: false }, "live")).not.toThrow();
		try {
			assertNetworkAllowed({ isTestnet: true }, "live");
			throw new Error("did not throw");
		} catch (err: any) {
			expect(err.code).toBe(400);
			expect(err.message).toBe("Live organizations can only use main networks");
			expect(err.data).toEqual({ errors: { networkId: NETWORK_NOT_ALLOWED_FOR_MODE } });
		}
		expect(() => assertNetworkAllowed({ isTestnet: false }, "sandbox", "sourceNetworkId")).toThrow(
			expect.objectContaining({ code: 400, message: "Sandbox organizations can only use test networks", data: { errors: { sourceNetworkId: "networkNotAllowedForMode" } } }),
		);
	});
});
