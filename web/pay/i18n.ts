/** The pay page's texts in English and Spanish; `{name}` placeholders. */
export type Lang = "en" | "es";

const EN = {
	// Sandbox banner, by whether a watcher follows the network (on a local or test chain with a watcher, coins really move on that chain).
	testMode: "Test mode: test coins sent on {network} are seen on the chain and credited like a real payment, but have no value. “Simulate payment” also completes it.",
	testModeSimulated: "Test mode: no watcher follows {network}, so coins sent there would never be seen. Only “Simulate payment” works here.",
	simulationOnly: "Only “Simulate payment” completes this checkout: do not send coins to this address.",
	payWith: "Pay with",
	onNetwork: "{token} on {network}",
	amount: "Amount",
	supportFee: "Support fee",
	supportChoice: "Add support",
	supportHint: "Optional: a percentage of the amount added to your payment.",
	bridgeFee: "Bridge fee",
	total: "Total",
	quoteLoading: "Getting a quote…",
	continue: "Continue to payment",
	sendExactly: "Send exactly {amount} {token} on {network}",
	depositAddress: "Deposit address",
	qrLabel: "QR code of the payment to {address}",
	copy: "Copy address",
	copied: "Address copied",
	openInWallet: "Open in a wallet app on this device",
	// Networks whose wallets read no payment URI: the QR code holds the address alone.
	exactNote: "Send exactly {amount} {token}: this QR code holds only the address, so your wallet cannot read the amount from it. Enter the amount yourself, and for a token pick the one whose id is shown below.",
	amountToSend: "Amount to send",
	copyAmount: "Copy amount",
	amountCopied: "Amount copied",
	copyAsset: "Copy token id",
	assetCopied: "Token id copied",
	assetContract: "{token} token contract",
	assetMint: "{token} token mint",
	assetJetton: "{token} jetton master",
	assetId: "{token} asset id",
	assetDenom: "{token} denom",
	assetMetadata: "{token} fungible asset address",
	timeLeft: "Time left to pay",
	payWithWallet: "Pay with wallet",
	walletSent: "Transaction sent from your wallet. Waiting for it on the chain…",
	walletFailed: "The wallet did not send the payment: {error}",
	simulate: "Simulate payment",
	simulating: "Simulating…",
	waiting: "Waiting for your payment…",
	partial: "Partly paid: {due} {token} still due.",
	confirming: "Payment seen: {n} of {m} confirmations…",
	paid: "Payment received. Thank you!",
	returning: "Returning to the merchant…",
	backToMerchant: "Back to the merchant",
	expired: "The time to pay has run out.",
	expiredPartial: "The time to pay ran out after a partial payment. Please contact the merchant.",
	canceled: "This payment was canceled.",
	unavailable: "This payment link is not accepting payments right now.",
	alreadyPaid: "This payment link has already been paid.",
	error: "Something went wrong: {error}",
	retry: "Try again",
	reconnecting: "Connection lost. Reconnecting…",
	language: "Language",
};

export type Key = keyof typeof EN;

const ES: Record<Key, string> = {
	testMode: "Modo de prueba: las monedas de prueba enviadas en {network} se ven en la cadena y se acreditan como un pago real, pero no tienen valor. «Simular pago» también lo completa.",
	testModeSimulated: "Modo de prueba: ningún vigilante de cadena sigue {network}, así que las monedas enviadas allí nunca se verían. Aquí solo funciona «Simular pago».",
	simulationOnly: "Solo «Simular pago» completa este pago: no envíes monedas a esta dirección.",
	payWith: "Pagar con",
	onNetwork: "{token} en {network}",
	amount: "Importe",
	supportFee: "Comisión de soporte",
	supportChoice: "Añadir apoyo",
	supportHint: "Opcional: un porcentaje del importe que se suma a tu pago.",
	bridgeFee: "Comisión de puente",
	total: "Total",
	quoteLoading: "Obteniendo una cotización…",
	continue: "Continuar al pago",
	sendExactly: "Envía exactamente {amount} {token} en {network}",
	depositAddress: "Dirección de depósito",
	qrLabel: "Código QR del pago a {address}",
	copy: "Copiar dirección",
	copied: "Dirección copiada",
	openInWallet: "Abrir en una billetera de este dispositivo",
	exactNote: "Envía exactamente {amount} {token}: este código QR solo contiene la dirección, así que tu billetera no puede leer el importe. Introdúcelo tú mismo y, si es un token, elige el que tiene el identificador que se muestra abajo.",
	amountToSend: "Importe a enviar",
	copyAmount: "Copiar importe",
	amountCopied: "Importe copiado",
	copyAsset: "Copiar identificador del token",
	assetCopied: "Identificador del token copiado",
	assetContract: "Contrato del token {token}",
	assetMint: "Mint del token {token}",
	assetJetton: "Jetton master de {token}",
	assetId: "Id del activo {token}",
	assetDenom: "Denom de {token}",
	assetMetadata: "Dirección del activo fungible {token}",
	timeLeft: "Tiempo restante para pagar",
	payWithWallet: "Pagar con billetera",
	walletSent: "Transacción enviada desde tu billetera. Esperándola en la cadena…",
	walletFailed: "La billetera no envió el pago: {error}",
	simulate: "Simular pago",
	simulating: "Simulando…",
	waiting: "Esperando tu pago…",
	partial: "Pago parcial: faltan {due} {token}.",
	confirming: "Pago detectado: {n} de {m} confirmaciones…",
	paid: "Pago recibido. ¡Gracias!",
	returning: "Volviendo al comercio…",
	backToMerchant: "Volver al comercio",
	expired: "Se acabó el tiempo para pagar.",
	expiredPartial: "El tiempo para pagar terminó tras un pago parcial. Contacta con el comercio.",
	canceled: "Este pago fue cancelado.",
	unavailable: "Este enlace de pago no acepta pagos en este momento.",
	alreadyPaid: "Este enlace de pago ya está pagado.",
	error: "Algo salió mal: {error}",
	retry: "Reintentar",
	reconnecting: "Conexión perdida. Reconectando…",
	language: "Idioma",
};

const TABLES: Record<Lang, Record<Key, string>> = { en: EN, es: ES };

/** `?lang=` first, then the browser's languages; English otherwise. */
export function pickLang(search: string, languages: readonly string[]): Lang {
	const q = new URLSearchParams(search).get("lang");
	for (const c of [q || "", ...languages]) {
		const base = c.toLowerCase().split(/[-_]/)[0];
		if (base === "es" || base === "en") return base;
	}
	return "en";
}

export function translator(lang: Lang) {
	return (key: Key, vars: Record<string, string | number> = {}) => TABLES[lang][key].replace(/\{(\w+)\}/g, (_, k) => String(vars[k] ?? ""));
}
