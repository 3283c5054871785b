/**
 * The ordered list of versioned migrations. Listed statically (not globbed) so the same list
 * runs under ts-jest and from the compiled dist/. Never edit a migration that has shipped:
 * add a new one.
 */
import * as m0001 from "./0001-platform";
import * as m0004 from "./0004-networks";
import * as m0005 from "./0005-pricing";
import * as m0006 from "./0006-payments";
import * as m0007 from "./0007-webhooks";
import * as m0008 from "./0008-chain-watchers";
import * as m0009 from "./0009-withdrawals";
import * as m0010 from "./0010-sweeps";
import * as m0011 from "./0011-sweep-proof";
import * as m0012 from "./0012-sweep-holds";
import * as m0013 from "./0013-request-queues";
import * as m0014 from "./0014-credit-reversals";
import * as m0017 from "./0017-kept-confirmations";
import * as m0018 from "./0018-solana-sweeps";
import * as m0019 from "./0019-open-addresses-index";
import * as m0020 from "./0020-deposit-address-lookup-index";

export interface Migration {
	name: string;
	up: typeof m0001.up;
	down: typeof m0001.down;
}

export const migrations: Migration[] = [{ name: "0001-platform", ...m0001 }, { name: "0004-networks", ...m0004 }, { name: "0005-pricing", ...m0005 }, { name: "0006-payments", ...m0006 }, { name: "0007-webhooks", ...m0007 }, { name: "0008-chain-watchers", ...m0008 }, { name: "0009-withdrawals", ...m0009 }, { name: "0010-sweeps", ...m0010 }, { name: "0011-sweep-proof", ...m0011 }, { name: "0012-sweep-holds", ...m0012 }, { name: "0013-request-queues", ...m0013 }, { name: "0014-credit-reversals", ...m0014 }, { name: "0017-kept-confirmations", ...m0017 }, { name: "0018-solana-sweeps", ...m0018 }, { name: "0019-open-addresses-index", ...m0019 }, { name: "0020-deposit-address-lookup-index", ...m0020 }];
