import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/** Column widths, shared with the catalogue's integrity tests. */
export const TOKEN_COLUMNS = { symbol: 20, name: 100, contractAddress: 128, image: 500 } as const;

export class Token extends Model<InferAttributes<Token>, InferCreationAttributes<Token>> {
	declare id: string;
	declare networkId: string;
	declare symbol: string;
	declare name: string;
	/** Contract, mint, asset id or denom on the token's chain; "" for the native coin (docs/networks.md). */
	declare contractAddress: string;
	declare decimals: number;
	declare isNative: boolean;
	declare isStablecoin: boolean;
	declare isActive: boolean;
	declare image: string | null;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;
	declare deletedAt: CreationOptional<Date | null>;

	static initModel(sequelize: Sequelize): typeof Token {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Token {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				networkId: DataTypes.STRING(36),
				symbol: DataTypes.STRING(TOKEN_COLUMNS.symbol),
				name: DataTypes.STRING(TOKEN_COLUMNS.name),
				contractAddress: DataTypes.STRING(TOKEN_COLUMNS.contractAddress),
				decimals: DataTypes.INTEGER,
				isNative: DataTypes.BOOLEAN,
				isStablecoin: DataTypes.BOOLEAN,
				isActive: DataTypes.BOOLEAN,
				image: DataTypes.STRING(TOKEN_COLUMNS.image),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				deletedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "tokens", paranoid: true },
		);
	}
}
