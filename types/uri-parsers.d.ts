/** Wallet URI parsers used by the pay page's URI tests (test dependencies without types): the parts the tests use. */
declare module "eth-url-parser" {
	export interface Eip681 {
		scheme: string;
		prefix?: string;
		target_address: string;
		chain_id?: string;
		function_name?: string;
		parameters?: Record<string, string>;
	}
	export function parse(uri: string): Eip681;
	export function build(data: Eip681): string;
}

declare module "bip21" {
	/** `urnScheme` defaults to "bitcoin"; `amount` is read as a JS number (the tests compare it through decimal.js). */
	export function decode(uri: string, urnScheme?: string): { address: string; options: { amount?: number; label?: string; message?: string } };
	export function encode(address: string, options?: Record<string, unknown>, urnScheme?: string): string;
}
