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

export { User, Session, AuthCode, AuthHash, EmailEvent, FileRecord, Organization, Membership, ApiKey };

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
	};
}
