/**
 * JSON kept in TEXT columns (metadata, withdrawal addresses, quotes): the same on MySQL and
 * SQLite, parsed on read, serialised on write. A value that does not parse reads as the fallback
 * rather than failing the whole row.
 */
import { DataTypes, ModelAttributeColumnOptions } from "sequelize";

export function jsonTextAttribute<T>(field: string, fallback: T, allowNull = true): ModelAttributeColumnOptions {
	return {
		type: DataTypes.TEXT,
		allowNull,
		get(this: { getDataValue(k: string): unknown }) {
			const raw = this.getDataValue(field);
			if (raw === null || raw === undefined) return fallback;
			if (typeof raw !== "string") return raw;
			try {
				return JSON.parse(raw);
			} catch {
				return fallback;
			}
		},
		set(this: { setDataValue(k: string, v: unknown): void }, value: unknown) {
			this.setDataValue(field, value === null || value === undefined ? null : JSON.stringify(value));
		},
	};
}
