/**
 * Preload for any bench that runs the node in its own process (docs/benchmarks.md "where a
 * credit's MariaDB time went"): `node -r ./test/helpers/ts-register.js -r ./bench/sql-times.ts
 * bench/watcher-evm.ts`. Times every `sequelize.query` (wall time from the call to its answer,
 * waits for a connection and for locks included) and every `sequelize.transaction`, sums them by
 * statement shape (literals and numbers masked) and prints the 40 largest sums on stderr at exit.
 * Statements sent past sequelize.query (lib/payments/rows.ts insertRow, selectRow) are not seen.
 */
import { Sequelize } from "sequelize";

type Query = (this: Sequelize, sql: unknown, options?: unknown) => Promise<unknown>;
type Transaction = (this: Sequelize, ...args: unknown[]) => Promise<unknown>;

const totals = new Map<string, { n: number; ms: number }>();
const proto = Sequelize.prototype as unknown as { query: Query; transaction: Transaction };
const query = proto.query;
const transaction = proto.transaction;
let transactions = 0;
let transactionMs = 0;

/** The statement with its values masked, 110 characters. */
function shapeOf(sql: unknown): string {
	const text = typeof sql === "string" ? sql : ((sql as { query?: string })?.query ?? String(sql));
	return text
		.replace(/'[^']*'/g, "?")
		.replace(/\$\d+/g, "?")
		.replace(/\d+/g, "N")
		.replace(/(\?,?\s*)+/g, "?")
		.slice(0, 110);
}

proto.query = async function (this: Sequelize, sql: unknown, options?: unknown) {
	const started = performance.now();
	try {
		return await query.call(this, sql, options);
	} finally {
		const key = shapeOf(sql);
		const entry = totals.get(key) ?? { n: 0, ms: 0 };
		entry.n++;
		entry.ms += performance.now() - started;
		totals.set(key, entry);
	}
};

proto.transaction = async function (this: Sequelize, ...args: unknown[]) {
	const started = performance.now();
	try {
		return await transaction.apply(this, args);
	} finally {
		transactions++;
		transactionMs += performance.now() - started;
	}
};

process.on("exit", () => {
	for (const [shape, { n, ms }] of [...totals.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 40)) {
		process.stderr.write(`${ms.toFixed(0).padStart(8)} ms ${String(n).padStart(7)} x  ${shape}\n`);
	}
	process.stderr.write(`DB transactions (sequelize.transaction): ${transactions}, ${transactionMs.toFixed(0)} ms\n`);
});
