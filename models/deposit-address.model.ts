import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";
import type { ChainType } from "../lib/chains";

/**
 * An HD-derived deposit address. UNIQUE (chainType, derivationIndex): each index of a chain
 * type's derivation path is handed out once; UNIQUE (networkId, address): an address names one
 * checkout on its network. `seedFingerprint` records which master seed derived it.
 */
export class DepositAddress extends Model<InferAttributes<DepositAddress>, InferCreationAttributes<DepositAddress>> {
	declare id: string;
	declare chainType: ChainType;
	declare networkId: string;
	declare derivationIndex: number;
	declare address: string;
	declare seedFingerprint: string;
	declare organizationId: string;
	declare transactionId: string;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof DepositAddress {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends DepositAddress {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				chainType: DataTypes.STRING(16),
				networkId: DataTypes.STRING(36),
				derivationIndex: DataTypes.INTEGER,
				address: DataTypes.STRING(128),
				seedFingerprint: DataTypes.STRING(16),
				organizationId: DataTypes.STRING(36),
				transactionId: DataTypes.STRING(36),
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "deposit_addresses", timestamps: false },
		);
	}
}

/** Next free derivation index per chain type (locked while a checkout takes one). */
export class DepositAddressCounter extends Model<InferAttributes<DepositAddressCounter>, InferCreationAttributes<DepositAddressCounter>> {
	declare chainType: string;
	declare nextIndex: number;

	static initModel(sequelize: Sequelize): typeof DepositAddressCounter {
		return (class extends DepositAddressCounter {}).init(
			{
				chainType: { type: DataTypes.STRING(16), primaryKey: true },
				nextIndex: DataTypes.INTEGER,
			},
			{ sequelize, tableName: "deposit_address_counters", timestamps: false },
		);
	}
}
