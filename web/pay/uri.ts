/**
 * Payment URIs for the QR code and wallet links, and token amounts in base units. Pure (no DOM):
 * unit-tested in test/web/pay/uri.test.ts.
 */

export interface UriTarget {
	chainType: string;
	chainId: number;
	address: string;
	/** Decimal string in token units. */
	amount: string;
	decimals: number;
	/** ERC-20 contract / SPL mint; empty for the native coin. */
	contractAddress: string;
	isNative: boolean;
}

/** "1.5" with 6 decimals → 1500000n. Refuses anything but a plain non-negative decimal. */
export function toBaseUnits(amount: string, decimals: number): bigint {
	const m = /^(\d+)(?:\.(\d+))?$/.exec(amount.trim());
	if (!m) throw new Error(`not a decimal amount: ${amount}`);
	const frac = (m[2] || "").replace(/0+$/, "");
	if (frac.length > decimals) throw new Error(`more than ${decimals} decimals: ${amount}`);
	return BigInt(m[1]) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, "0") || "0");
}

/** "1.500" → "1.5", "2.0" → "2". */
export function trimAmount(amount: string): string {
	if (!amount.includes(".")) return amount;
	return amount.replace(/0+$/, "").replace(/\.$/, "");
}

/**
 * EIP-681 for EVM (native: `ethereum:<to>@<chainId>?value=<wei>`; ERC-20:
 * `ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<units>`), BIP-21 for Bitcoin,
 * Solana Pay for Solana (`spl-token` for a mint), the bare address elsewhere.
 */
export function paymentUri(t: UriTarget): string {
	const amount = trimAmount(t.amount);
	switch (t.chainType) {
		case "evm": {
			const units = toBaseUnits(t.amount, t.decimals).toString();
			if (t.isNative || !t.contractAddress) return `ethereum:${t.address}@${t.chainId}?value=${units}`;
			return `ethereum:${t.contractAddress}@${t.chainId}/transfer?address=${t.address}&uint256=${units}`;
		}
		case "bitcoin":
			return `bitcoin:${t.address}?amount=${amount}`;
		case "solana":
			return `solana:${t.address}?amount=${amount}${!t.isNative && t.contractAddress ? `&spl-token=${t.contractAddress}` : ""}`;
		default:
			return t.address;
	}
}

/** `transfer(address,uint256)` call data of an ERC-20 payment. */
export function erc20TransferData(to: string, units: bigint): string {
	const addr = to.toLowerCase().replace(/^0x/, "");
	if (!/^[0-9a-f]{40}$/.test(addr)) throw new Error("not an EVM address");
	return `0xa9059cbb${addr.padStart(64, "0")}${units.toString(16).padStart(64, "0")}`;
}
