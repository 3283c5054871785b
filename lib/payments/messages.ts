/**
 * Spanish of the messages the payments modules throw (lib/i18n.ts templates: `{state}` and the
 * like are kept as sent). Imported for its effect by every payments service.
 */
import { registerTranslations } from "../i18n";

registerTranslations("es", {
	"Cannot update a payment intent in state {state}": "No se puede actualizar una intención de pago en estado {state}",
	"Cannot confirm a payment intent in state {state}": "No se puede confirmar una intención de pago en estado {state}",
	"Cannot complete a payment intent in state {state}": "No se puede completar una intención de pago en estado {state}",
	"Cannot cancel a payment intent in state {state}": "No se puede cancelar una intención de pago en estado {state}",
	"Cannot pay a payment intent in state {state}": "No se puede pagar una intención de pago en estado {state}",
	"Cannot simulate a payment for a payment intent in state {state}": "No se puede simular un pago de una intención de pago en estado {state}",
	"Cannot expire a payment intent in state {state}": "No se puede caducar una intención de pago en estado {state}",
	"Cannot reopen a payment intent in state {state}": "No se puede reabrir una intención de pago en estado {state}",
	"Cannot pay a payment link in state {state}": "No se puede pagar un enlace de pago en estado {state}",
	"Cannot cancel a payment link in state {state}": "No se puede cancelar un enlace de pago en estado {state}",
	"Cannot update a payment link in state {state}": "No se puede actualizar un enlace de pago en estado {state}",
	"Cannot activate a payment link in state {state}": "No se puede activar un enlace de pago en estado {state}",
	"Cannot pause a payment link in state {state}": "No se puede pausar un enlace de pago en estado {state}",
	"Cannot update a transaction in state {state}": "No se puede actualizar una transacción en estado {state}",
	"Cannot simulate a payment for a transaction in state {state}": "No se puede simular un pago de una transacción en estado {state}",
	"supportPercent must be a number from 0 to 10": "supportPercent debe ser un número entre 0 y 10",
	"metadata must be an object": "metadata debe ser un objeto",
	"metadata must be at most {bytes} bytes of JSON": "metadata debe ocupar como máximo {bytes} bytes de JSON",
	"withdrawal addresses must be an object keyed by chain type": "las direcciones de retiro deben ser un objeto por tipo de cadena",
	"Invalid withdrawal address": "Dirección de retiro no válida",
	"Expiry must be an ISO 8601 date-time": "La caducidad debe ser una fecha y hora ISO 8601",
	"Expiry must be in the future": "La caducidad debe estar en el futuro",
	"Expiry must be within a year": "La caducidad debe estar dentro de un año",
	"Amount must be greater than zero": "El importe debe ser mayor que cero",
	"Amount has more decimals than the token allows": "El importe tiene más decimales de los que admite el token",
	"Amount is too large": "El importe es demasiado grande",
	"Amount is too small": "El importe es demasiado pequeño",
	"Payment link not found": "Enlace de pago no encontrado",
	"Transaction not found": "Transacción no encontrada",
	"This payment link has too many open checkouts; wait for one to expire": "Este enlace de pago tiene demasiados pagos abiertos; espere a que caduque alguno",
	"payerTokenId is required for another network": "payerTokenId es obligatorio para otra red",
	"No USD price is available for {symbol}": "No hay precio en USD disponible para {symbol}",
	"Only the crypto payment method is supported": "Solo se admite el método de pago crypto",
	"Invalid Idempotency-Key header": "Cabecera Idempotency-Key no válida",
	"Idempotency-Key was already used with a different request": "La Idempotency-Key ya se usó con otra solicitud",
	"A request with this Idempotency-Key is being processed; retry later": "Se está procesando una solicitud con esta Idempotency-Key; reintente más tarde",
});
