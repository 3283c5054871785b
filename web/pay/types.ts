/** A token the payer may choose on the pay page (services/links.service.ts `payPage` makes them). */
export interface PayOption {
	tokenId: string;
	symbol: string;
	name: string;
	decimals: number;
	contractAddress: string;
	isNative: boolean;
	networkId: string;
	networkName: string;
	chainType: string;
	chainId: number;
	/**
	 * The network's payment URI scheme from the catalogue (lib/networks/catalogue.ts `uriScheme`):
	 * "ethereum", "bitcoin", "litecoin", "solana", "ton"; null where the QR code holds the address alone.
	 */
	uriScheme: string | null;
	/** A chain watcher follows the network: a payment sent there is seen. Sandbox only offers unwatched ones (simulation only). */
	watched: boolean;
}
