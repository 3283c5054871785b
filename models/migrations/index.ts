/**
 * The ordered list of versioned migrations. Listed statically (not globbed) so the same list
 * runs under ts-jest and from the compiled dist/. Never edit a migration that has shipped:
 * add a new one.
 */
import * as m0001 from "./0001-platform";

export interface Migration {
	name: string;
	up: typeof m0001.up;
	down: typeof m0001.down;
}

export const migrations: Migration[] = [{ name: "0001-platform", ...m0001 }];
