import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import type { ChainType } from "../lib/networks/catalogue";

/** Column widths, shared with the catalogue's integrity tests. */
export const NETWORK_COLUMNS = { slug: 64, name: 100, chainType: 16, blockExplorerUrl: 255, image: 500 } as const;

/**
 * JSON kept in a TEXT column (same on MySQL and SQLite) and parsed by the getter. A value that
 * does not parse reads as `fallback` rather than failing every read of the row.
 */
export function jsonTextAttribute(field: string, allowNull: boolean, fallback: unknown) {
	return {
		type: DataTypes.TEXT,
		allowNull,
		get(this: Model) {
			const raw = this.getDataValue(field) as unknown;
			if (raw === null || raw === undefined) return allowNull ? null : fallback;
			if (typeof raw !== "string") return raw;
			try {
				return JSON.parse(raw);
			} catch {
				return fallback;
			}
		},
		set(this: Model, value: unknown) {
			this.setDataValue(field, value === null || value === undefined ? null : JSON.stringify(value));
		},
	};
}

export class Network extends Model<InferAttributes<Network>, InferCreationAttributes<Network>> {
	declare id: string;
	/** Stable catalogue key; the id is UUID v5 of it (lib/networks/catalogue.ts). */
	declare slug: string;
	declare name: string;
	declare chainType: ChainType;
	declare chainId: number;
	declare blockExplorerUrl: string;
	declare publicRpcUrls: string[];
	declare isActive: boolean;
	declare isTestnet: boolean;
	declare listenerConfig: Record<string, unknown> | null;
	declare requiredConfirmations: number;
	declare image: string | null;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;
	declare deletedAt: CreationOptional<Date | null>;

	static initModel(sequelize: Sequelize): typeof Network {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Network {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				slug: DataTypes.STRING(NETWORK_COLUMNS.slug),
				name: DataTypes.STRING(NETWORK_COLUMNS.name),
				chainType: DataTypes.STRING(NETWORK_COLUMNS.chainType),
				chainId: {
					// BIGINT: Tron Nile's id (3448148188) does not fit INT. mysql2 returns BIGINT as a string.
					type: DataTypes.BIGINT,
					get(this: Model) {
						const raw = this.getDataValue("chainId") as unknown;
						return raw === null || raw === undefined ? raw : Number(raw);
					},
				},
				blockExplorerUrl: DataTypes.STRING(NETWORK_COLUMNS.blockExplorerUrl),
				publicRpcUrls: jsonTextAttribute("publicRpcUrls", false, []),
				isActive: DataTypes.BOOLEAN,
				isTestnet: DataTypes.BOOLEAN,
				listenerConfig: jsonTextAttribute("listenerConfig", true, null),
				requiredConfirmations: DataTypes.INTEGER,
				image: DataTypes.STRING(NETWORK_COLUMNS.image),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				deletedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "networks", paranoid: true },
		);
	}
}
