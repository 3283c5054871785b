import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/** Per-address history used for daily caps, cooldowns and the failed-login lockout. */
export type EmailEventKind = "confirm" | "confirm_resend" | "reset" | "login_code" | "register_code" | "login_failure";

export class EmailEvent extends Model<InferAttributes<EmailEvent>, InferCreationAttributes<EmailEvent>> {
	declare id: CreationOptional<number>;
	declare email: string;
	declare kind: EmailEventKind;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof EmailEvent {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends EmailEvent {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				email: DataTypes.STRING(254),
				kind: DataTypes.STRING(30),
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "email_events", updatedAt: false },
		);
	}
}
