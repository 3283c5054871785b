import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/** A sign-in session: the access token names it (`sid`), the refresh token carries its current nonce. */
export class Session extends Model<InferAttributes<Session>, InferCreationAttributes<Session>> {
	declare id: string;
	declare userId: number;
	declare refreshNonce: string;
	declare expiresAt: Date;
	declare endedAt: CreationOptional<Date | null>;
	declare endReason: CreationOptional<string | null>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof Session {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Session {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				userId: DataTypes.INTEGER,
				refreshNonce: DataTypes.STRING(64),
				expiresAt: DataTypes.DATE(3),
				endedAt: DataTypes.DATE(3),
				endReason: DataTypes.STRING(30),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "sessions" },
		);
	}
}
