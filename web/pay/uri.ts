/**
 * Payment URIs for the QR code and wallet links, and token amounts in base units. Pure (no DOM):
 * unit-tested in test/web/pay/uri.test.ts.
 */

export interface UriTarget {
	/** The network's scheme from the catalogue (PayOption.uriScheme); null: the bare address. */
	uriScheme: string | null;
	/** EIP-155 chain id (EVM only). */
	chainId: number;
	address: string;
	/** Decimal string in token units. */
	amount: string;
	decimals: number;
	/** ERC-20 contract / SPL mint / jetton master; empty for the native coin. */
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

/** 1500000n with 6 decimals → "1.5" (no trailing zeros, a leading 0 before the point). */
export function fromBaseUnits(units: bigint, decimals: number): string {
	const neg = units < 0n;
	const str = (neg ? -units : units).toString().padStart(decimals + 1, "0");
	const whole = decimals ? str.slice(0, -decimals) : str;
	const frac = decimals ? str.slice(-decimals).replace(/0+$/, "") : "";
	return `${neg ? "-" : ""}${whole}${frac ? `.${frac}` : ""}`;
}

/** "1.500" → "1.5", "2.0" → "2". */
export function trimAmount(amount: string): string {
	if (!amount.includes(".")) return amount;
	return amount.replace(/0+$/, "").replace(/\.$/, "");
}

const token = (t: UriTarget) => !t.isNative && Boolean(t.contractAddress);

/**
 * The payment URI of the QR code, by the network's scheme (docs/pay-page.md "Paying"):
 * - `ethereum`: EIP-681; native `ethereum:<to>@<chainId>?value=<wei>`, ERC-20
 *   `ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<base units>`;
 * - `bitcoin`, `litecoin`: BIP-21 with the coin's own scheme, `amount` in coins (a decimal);
 * - `solana`: Solana Pay transfer request, `amount` in token units (SOL, not lamports; a decimal
 *   with at most the mint's decimals), `spl-token=<mint>` for a token;
 * - `ton`: the wallets' `ton://transfer/<address>?amount=<nanotons>`; a jetton adds
 *   `jetton=<master>` and `amount` is then in the jetton's base units;
 * - anything else: the bare address.
 * Amounts are exact: decimal strings through BigInt, never a JS number.
 */
export function paymentUri(t: UriTarget): string {
	const units = () => toBaseUnits(t.amount, t.decimals);
	switch (t.uriScheme) {
		case "ethereum":
			if (!token(t)) return `ethereum:${t.address}@${t.chainId}?value=${units()}`;
			return `ethereum:${t.contractAddress}@${t.chainId}/transfer?address=${t.address}&uint256=${units()}`;
		case "bitcoin":
		case "litecoin":
			return `${t.uriScheme}:${t.address}?amount=${fromBaseUnits(units(), t.decimals)}`;
		case "solana":
			return `solana:${t.address}?amount=${fromBaseUnits(units(), t.decimals)}${token(t) ? `&spl-token=${t.contractAddress}` : ""}`;
		case "ton":
			return `ton://transfer/${t.address}?amount=${units()}${token(t) ? `&jetton=${t.contractAddress}` : ""}`;
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
