import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

export class FileRecord extends Model<InferAttributes<FileRecord>, InferCreationAttributes<FileRecord>> {
	declare id: string;
	declare userId: number;
	declare path: string;
	declare originalName: string;
	declare mimeType: string;
	declare size: number;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof FileRecord {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends FileRecord {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				userId: DataTypes.INTEGER,
				path: DataTypes.STRING(500),
				originalName: DataTypes.STRING(255),
				mimeType: DataTypes.STRING(100),
				size: DataTypes.INTEGER,
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "files" },
		);
	}
}
