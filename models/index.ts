/** Defines every model on the node's one Sequelize instance. Services use only the models they own. */
import { Sequelize } from "sequelize";
import { User } from "./user.model";
import { Session } from "./session.model";
import { AuthCode } from "./auth-code.model";
import { AuthHash } from "./auth-hash.model";
import { EmailEvent } from "./email-event.model";
import { FileRecord } from "./file.model";
import { Organization, Membership } from "./organization.model";
import { ApiKey } from "./api-key.model";
import { Network } from "./network.model";
import { Token } from "./token.model";
import { Currency } from "./currency.model";
import { CurrencyRate } from "./currency-rate.model";
import { TokenPrice } from "./token-price.model";
import { PaymentIntent } from "./payment-intent.model";
import { IdempotencyKey } from "./idempotency-key.model";
import { PaymentLink } from "./payment-link.model";
import { Transaction, TransactionCredit, PaymentDetection } from "./transaction.model";
import { ChainCursor, ChainTransfer } from "./chain.model";
import { Sweep, SweepHold, SweepItem, SweepWallet } from "./sweep.model";
import { DepositAddress, DepositAddressCounter } from "./deposit-address.model";
import { OutboxEvent } from "./outbox-event.model";
import { WebhookDelivery } from "./webhook-delivery.model";
import { WebhookLog } from "./webhook-log.model";
import { InboundEvent } from "./inbound-event.model";
import { WithdrawalSettings, LedgerEntry, LedgerAccount, WithdrawalRequest, WithdrawalFeedCursor } from "./withdrawal.model";

export { User, Session, AuthCode, AuthHash, EmailEvent, FileRecord, Organization, Membership, ApiKey, Network, Token, Currency, CurrencyRate, TokenPrice };
export { PaymentIntent, IdempotencyKey, PaymentLink, Transaction, TransactionCredit, DepositAddress, DepositAddressCounter, OutboxEvent };
export { WebhookDelivery, WebhookLog, InboundEvent, PaymentDetection, ChainCursor, ChainTransfer, Sweep, SweepHold, SweepItem, SweepWallet };
export { WithdrawalSettings, LedgerEntry, LedgerAccount, WithdrawalRequest, WithdrawalFeedCursor };

export interface Models {
	User: typeof User;
	Session: typeof Session;
	AuthCode: typeof AuthCode;
	AuthHash: typeof AuthHash;
	EmailEvent: typeof EmailEvent;
	FileRecord: typeof FileRecord;
	Organization: typeof Organization;
	Membership: typeof Membership;
	ApiKey: typeof ApiKey;
	Network: typeof Network;
	Token: typeof Token;
	Currency: typeof Currency;
	CurrencyRate: typeof CurrencyRate;
	TokenPrice: typeof TokenPrice;
	PaymentIntent: typeof PaymentIntent;
	IdempotencyKey: typeof IdempotencyKey;
	PaymentLink: typeof PaymentLink;
	Transaction: typeof Transaction;
	TransactionCredit: typeof TransactionCredit;
	DepositAddress: typeof DepositAddress;
	DepositAddressCounter: typeof DepositAddressCounter;
	OutboxEvent: typeof OutboxEvent;
	WebhookDelivery: typeof WebhookDelivery;
	WebhookLog: typeof WebhookLog;
	InboundEvent: typeof InboundEvent;
	PaymentDetection: typeof PaymentDetection;
	ChainCursor: typeof ChainCursor;
	ChainTransfer: typeof ChainTransfer;
	WithdrawalSettings: typeof WithdrawalSettings;
	LedgerEntry: typeof LedgerEntry;
	LedgerAccount: typeof LedgerAccount;
	WithdrawalRequest: typeof WithdrawalRequest;
	WithdrawalFeedCursor: typeof WithdrawalFeedCursor;
	Sweep: typeof Sweep;
	SweepItem: typeof SweepItem;
	SweepWallet: typeof SweepWallet;
	SweepHold: typeof SweepHold;
}

export function defineModels(sequelize: Sequelize): Models {
	return {
		User: User.initModel(sequelize),
		Session: Session.initModel(sequelize),
		AuthCode: AuthCode.initModel(sequelize),
		AuthHash: AuthHash.initModel(sequelize),
		EmailEvent: EmailEvent.initModel(sequelize),
		FileRecord: FileRecord.initModel(sequelize),
		Organization: Organization.initModel(sequelize),
		Membership: Membership.initModel(sequelize),
		ApiKey: ApiKey.initModel(sequelize),
		Network: Network.initModel(sequelize),
		Token: Token.initModel(sequelize),
		Currency: Currency.initModel(sequelize),
		CurrencyRate: CurrencyRate.initModel(sequelize),
		TokenPrice: TokenPrice.initModel(sequelize),
		PaymentIntent: PaymentIntent.initModel(sequelize),
		IdempotencyKey: IdempotencyKey.initModel(sequelize),
		PaymentLink: PaymentLink.initModel(sequelize),
		Transaction: Transaction.initModel(sequelize),
		TransactionCredit: TransactionCredit.initModel(sequelize),
		DepositAddress: DepositAddress.initModel(sequelize),
		DepositAddressCounter: DepositAddressCounter.initModel(sequelize),
		OutboxEvent: OutboxEvent.initModel(sequelize),
		WebhookDelivery: WebhookDelivery.initModel(sequelize),
		WebhookLog: WebhookLog.initModel(sequelize),
		InboundEvent: InboundEvent.initModel(sequelize),
		PaymentDetection: PaymentDetection.initModel(sequelize),
		ChainCursor: ChainCursor.initModel(sequelize),
		ChainTransfer: ChainTransfer.initModel(sequelize),
		WithdrawalSettings: WithdrawalSettings.initModel(sequelize),
		LedgerEntry: LedgerEntry.initModel(sequelize),
		LedgerAccount: LedgerAccount.initModel(sequelize),
		WithdrawalRequest: WithdrawalRequest.initModel(sequelize),
		WithdrawalFeedCursor: WithdrawalFeedCursor.initModel(sequelize),
		Sweep: Sweep.initModel(sequelize),
		SweepItem: SweepItem.initModel(sequelize),
		SweepWallet: SweepWallet.initModel(sequelize),
		SweepHold: SweepHold.initModel(sequelize),
	};
}
