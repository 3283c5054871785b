/**
 * lib/payments/rows.ts against the ORM it replaces on the hot paths: a row written by insertRow
 * reads back exactly like the same row written by Model.create (every column, both backends),
 * and selectOne answers what findOne answers. The multi-row helpers of a credit batch:
 * selectRows reads what findAll reads (as plain rows), insertRows writes what bulkCreate writes,
 * updateRows what each row's save writes.
 */
import crypto from "node:crypto";
import { QueryTypes, Sequelize } from "sequelize";
import { inlineValue, insertRow, insertRows, selectOne, selectRow, selectRows, updateRows } from "../../../lib/payments/rows";
import { startNode, TestNode } from "../../helpers/harness";

describe("lib/payments/rows", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode({ services: ["api"] });
	});
	afterAll(async () => {
		await node?.stop();
	});

	const created = new Date(Date.UTC(2026, 10, 23, 12, 34, 56, 789));
	const expires = new Date(Date.UTC(2027, 0, 2, 3, 4, 5, 6));
	// Ids the ORM and the raw row share, so only id and slug differ between them.
	const shared = { intentId: crypto.randomUUID(), tokenId: crypto.randomUUID(), networkId: crypto.randomUUID(), rateId: crypto.randomUUID(), linkId: crypto.randomUUID() };

	function linkValues(id: string, slug: string, org: string) {
		return {
			id,
			organizationId: org,
			mode: "sandbox" as const,
			intentId: shared.intentId,
			ownedByIntent: true,
			slug,
			// Characters inlined SQL text mishandles: quotes, backslash, and a NUL byte (bound, never escaped).
			title: "Order 'quoted' \\ \"1234\" ñ \u0000 end",
			// Not canonical on purpose: the money setter stores the canonical string.
			amount: "0012.500000",
			tokenId: shared.tokenId,
			networkId: shared.networkId,
			status: "active" as const,
			expiresAt: expires,
			metadata: { orderId: "1234", nested: { a: [1, "x'y", "\u0000"] } },
			withdrawalAddresses: { ethereum: "0xabc" },
			singleUse: false,
			payerEmail: null,
			payerAddress: null,
			createdByUserId: 7,
			createdAt: created,
			updatedAt: created,
			deletedAt: null,
		};
	}

	function intentValues(id: string, org: string) {
		return {
			id,
			organizationId: org,
			apiKeyId: null,
			mode: "live" as const,
			amount: "100.10",
			currency: "eur",
			tokenAmount: "123456789012345678901234567890.123456789012345678",
			currencyRateId: shared.rateId,
			amountUsd: "108.5",
			rate: "1.233333333333333333",
			tokenId: shared.tokenId,
			networkId: shared.networkId,
			status: "requires_payment_method" as const,
			paymentMethodTypes: ["crypto"],
			clientSecretDigest: "f".repeat(64),
			returnUrl: "https://shop.example.com/return?a=1&b='2'",
			cancelUrl: null,
			description: "line 1\nline 2\u0000$1 $$",
			metadata: {},
			expiresAt: null,
			withdrawalAddresses: null,
			paymentLinkId: shared.linkId,
			latestTransactionId: null,
			cancellationReason: null,
			canceledAt: null,
			succeededAt: created,
			reversal: null,
			createdAt: created,
			updatedAt: created,
		};
	}

	/** Every attribute through the model's getters, without the id-like columns that must differ. */
	function columns(row: { get(k: string): unknown } | Record<string, unknown>, names: string[], skip: string[]) {
		const get = (k: string) => (typeof (row as { get?: unknown }).get === "function" ? (row as { get(k: string): unknown }).get(k) : (row as Record<string, unknown>)[k]);
		return Object.fromEntries(names.filter(n => !skip.includes(n)).map(n => [n, get(n)]));
	}

	it("writes a link and an intent exactly as Model.create does", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const [viaOrm, viaRaw] = [crypto.randomUUID(), crypto.randomUUID()];
		const [linkOrm, linkRaw] = [crypto.randomUUID(), crypto.randomUUID()];
		let answered: { link: Record<string, unknown>; intent: Record<string, unknown> } | null = null;
		await sequelize.transaction(async t => {
			await models.PaymentLink.create(linkValues(linkOrm, `pl_${linkOrm}`, org), { transaction: t });
			await models.PaymentIntent.create(intentValues(viaOrm, org), { transaction: t });
			const link = await insertRow(models.PaymentLink, linkValues(linkRaw, `pl_${linkRaw}`, org), t);
			const intent = await insertRow(models.PaymentIntent, intentValues(viaRaw, org), t);
			answered = { link, intent };
		});

		const linkNames = Object.keys(models.PaymentLink.getAttributes());
		const intentNames = Object.keys(models.PaymentIntent.getAttributes());
		const ormLink = await models.PaymentLink.findByPk(linkOrm);
		const rawLink = await models.PaymentLink.findByPk(linkRaw);
		const ormIntent = await models.PaymentIntent.findByPk(viaOrm);
		const rawIntent = await models.PaymentIntent.findByPk(viaRaw);
		expect(rawLink && ormLink && rawIntent && ormIntent).toBeTruthy();

		expect(columns(rawLink!, linkNames, ["id", "slug"])).toEqual(columns(ormLink!, linkNames, ["id", "slug"]));
		expect(columns(rawIntent!, intentNames, ["id"])).toEqual(columns(ormIntent!, intentNames, ["id"]));
		// Money is stored as exact canonical strings and dates keep their milliseconds.
		expect(rawLink!.amount).toBe("12.5");
		expect(rawIntent!.tokenAmount).toBe("123456789012345678901234567890.123456789012345678");
		expect(rawIntent!.rate).toBe("1.233333333333333333");
		expect(rawLink!.expiresAt?.toISOString()).toBe(expires.toISOString());
		expect(rawIntent!.createdAt.toISOString()).toBe(created.toISOString());
		expect(rawLink!.title).toBe("Order 'quoted' \\ \"1234\" ñ \u0000 end");
		expect(rawIntent!.description).toBe("line 1\nline 2\u0000$1 $$");
		expect(rawLink!.singleUse).toBe(false);

		// And the stored column values themselves (as the driver returns them, no model in between).
		const stored = async (table: string, id: string) =>
			((await sequelize.query(`SELECT * FROM ${table} WHERE id = ?`, { replacements: [id], type: QueryTypes.SELECT, raw: true })) as Array<Record<string, unknown>>)[0];
		const [sl1, sl2] = [await stored("payment_links", linkRaw), await stored("payment_links", linkOrm)];
		expect({ ...sl1, id: null, slug: null }).toEqual({ ...sl2, id: null, slug: null });
		const [si1, si2] = [await stored("payment_intents", viaRaw), await stored("payment_intents", viaOrm)];
		expect({ ...si1, id: null }).toEqual({ ...si2, id: null });

		// The answer is the row as a read gives it.
		expect(answered!.link).toEqual(columns(rawLink!, linkNames, []));
		expect(answered!.intent).toEqual(columns(rawIntent!, intentNames, []));
	});

	it("refuses a row with a column left out", async () => {
		const { models, sequelize } = node.app;
		const { cancelUrl: _left, ...partial } = intentValues(crypto.randomUUID(), crypto.randomUUID());
		await expect(sequelize.transaction(t => insertRow(models.PaymentIntent, partial as never, t))).rejects.toThrow(/no value for column cancelUrl/);
	});

	it("fails as the ORM does: a duplicate key is a UniqueConstraintError and nothing of the transaction stays", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const id = crypto.randomUUID();
		await sequelize.transaction(t => insertRow(models.PaymentIntent, intentValues(id, org), t));
		const linkId = crypto.randomUUID();
		const err = await sequelize
			.transaction(async t => {
				await insertRow(models.PaymentLink, linkValues(linkId, `pl_${linkId}`, org), t);
				await insertRow(models.PaymentIntent, intentValues(id, org), t);
			})
			.catch(e => e);
		expect(err).toMatchObject({ name: "SequelizeUniqueConstraintError" });
		expect(await models.PaymentLink.findByPk(linkId)).toBeNull();
		expect(await models.PaymentIntent.count({ where: { organizationId: org } })).toBe(1);
	});

	it("selectOne answers what findOne answers, and null for another organization", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const id = crypto.randomUUID();
		await sequelize.transaction(t => insertRow(models.PaymentIntent, intentValues(id, org), t));
		const names = Object.keys(models.PaymentIntent.getAttributes());
		const found = await selectOne(models.PaymentIntent, { id, organizationId: org });
		const orm = await models.PaymentIntent.findOne({ where: { id, organizationId: org } });
		expect(found).toBeInstanceOf(models.PaymentIntent);
		expect(columns(found!, names, [])).toEqual(columns(orm!, names, []));
		expect(found!.isNewRecord).toBe(false);
		expect(await selectOne(models.PaymentIntent, { id, organizationId: crypto.randomUUID() })).toBeNull();
		expect(await selectOne(models.PaymentIntent, { id: "x' OR '1'='1", organizationId: org })).toBeNull();
		expect(await selectOne(models.PaymentIntent, { id: "x\u0000' OR '1'='1", organizationId: org })).toBeNull();
		expect(await selectOne(models.PaymentIntent, { id: "$1", organizationId: "$2" })).toBeNull();
	});

	it("selectRow answers findOne's attributes as a plain object (getters applied), and null for another organization", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const id = crypto.randomUUID();
		const withDates = { ...intentValues(id, org), expiresAt: expires, metadata: { orderId: "1234", nested: { a: [1, "x'y"] } }, withdrawalAddresses: { ethereum: "0xabc" } };
		await sequelize.transaction(t => insertRow(models.PaymentIntent, withDates, t));
		const row = await selectRow(models.PaymentIntent, { id, organizationId: org });
		const orm = await models.PaymentIntent.findOne({ where: { id, organizationId: org } });
		expect(row).not.toBeInstanceOf(models.PaymentIntent);
		expect(row).toEqual(orm!.get());
		expect(row!.expiresAt).toEqual(expires);
		expect(row!.createdAt).toEqual(created);
		expect(row!.tokenAmount).toBe("123456789012345678901234567890.123456789012345678");
		expect(row!.metadata).toEqual({ orderId: "1234", nested: { a: [1, "x'y"] } });
		expect(await selectRow(models.PaymentIntent, { id, organizationId: crypto.randomUUID() })).toBeNull();
		expect(await selectRow(models.PaymentIntent, { id: "x' OR '1'='1", organizationId: org })).toBeNull();
		expect(await selectRow(models.PaymentIntent, { id: "x\u0000' OR '1'='1", organizationId: org })).toBeNull();
		// Many reads at once hand every pooled connection back (more than the pool holds).
		const many = await Promise.all(Array.from({ length: 60 }, () => selectRow(models.PaymentIntent, { id, organizationId: org })));
		expect(many.every(r => r?.id === id)).toBe(true);
	});

	it("selectRow with attributes answers findOne's attributes for those columns only, and null for another organization", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const id = crypto.randomUUID();
		const reversal = { transactionId: crypto.randomUUID(), amount: "1.5", currency: "usdc", hash: "0xabc", reversedAt: created.toISOString() };
		await sequelize.transaction(t => insertRow(models.PaymentIntent, { ...intentValues(id, org), expiresAt: expires, reversal }, t));
		const attributes = ["id", "amount", "status", "paymentMethodTypes", "reversal", "createdAt", "expiresAt", "latestTransactionId"] as const;
		const row = await selectRow(models.PaymentIntent, { id, organizationId: org }, attributes);
		const orm = (await models.PaymentIntent.findOne({ where: { id, organizationId: org } }))!.get();
		expect(Object.keys(row!).sort()).toEqual([...attributes].sort());
		expect(row).toEqual(Object.fromEntries(attributes.map(a => [a, orm[a]])));
		expect(row!.reversal).toEqual(reversal);
		expect(row!.expiresAt).toEqual(expires);
		// Same shape again (the statement is built once), other values; another organization's id is null.
		expect(await selectRow(models.PaymentIntent, { id, organizationId: crypto.randomUUID() }, attributes)).toBeNull();
		expect(await selectRow(models.PaymentIntent, { id: "x' OR '1'='1", organizationId: org }, attributes)).toBeNull();
		await expect(selectRow(models.PaymentIntent, { id, organizationId: org }, ["nope" as never])).rejects.toThrow(/no attribute nope/);
	});

	it("inlineValue writes what sequelize.escape writes on MySQL, every special character included", async () => {
		// A MySQL Sequelize that never connects (escape needs no connection).
		const mysql = new Sequelize({ dialect: "mysql", logging: false, timezone: "+00:00" });
		const specials = ["\0", "\n", "\r", "\b", "\t", "\\", "'", '"', "\x1a"];
		const values: unknown[] = [
			"", "abc", crypto.randomUUID(), "0xAbC0000000000000000000000000000000000001", "12.5", "reconcile:0xabc:12", "é ü 中", "%_?$1", "--", "/* */", ";",
			...specials, ...specials.map(c => `a${c}b`), specials.join(""),
			0, 1, -1, 1.5, 123456789012, Number.MAX_SAFE_INTEGER, true, false, null, new Date("2026-11-26T21:00:00.123Z"),
		];
		for (const v of values) expect(inlineValue(mysql, v)).toBe(mysql.escape(v as string));
		await mysql.close();
	});

	it("selectRows reads plain rows as findAll reads them: money, JSON, booleans and dates through the same getters", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const ids = [crypto.randomUUID(), crypto.randomUUID()].sort();
		await sequelize.transaction(async t => {
			for (const id of ids) await insertRow(models.PaymentLink, linkValues(id, `pl_${id}`, org), t);
		});
		const names = Object.keys(models.PaymentLink.getAttributes());
		const orm = await models.PaymentLink.findAll({ where: { id: ids }, order: [["id", "ASC"]] });
		const plain = await sequelize.transaction(t => selectRows(models.PaymentLink, { id: ids, organizationId: org, deletedAt: null }, t, { lock: true, orderBy: "id" }));
		expect(plain).toHaveLength(2);
		expect(plain.map(r => columns(r as unknown as Record<string, unknown>, names, []))).toEqual(orm.map(r => columns(r, names, [])));
		expect(plain[0].amount).toBe("12.5");
		expect(plain[0].singleUse).toBe(false);
		expect(plain[0].ownedByIntent).toBe(true);
		expect(plain[0].expiresAt).toEqual(expires);
		expect(plain[0].metadata).toEqual({ orderId: "1234", nested: { a: [1, "x'y", "\u0000"] } });
		// `columns`: only those, through the same getters.
		const some = await selectRows(models.PaymentLink, { id: ids }, undefined, { orderBy: "id", columns: ["id", "amount", "singleUse"] });
		expect(some).toEqual(plain.map(r => ({ id: r.id, amount: r.amount, singleUse: r.singleUse })));
		expect(await selectRows(models.PaymentLink, { id: [] }, undefined)).toEqual([]);
		expect(await selectRows(models.PaymentLink, { id: ["x' OR '1'='1"], organizationId: org }, undefined)).toEqual([]);
	});

	it("insertRows writes the rows bulkCreate writes (defaults, auto-increment key, hooks) and updateRows what save writes", async () => {
		const { models, sequelize } = node.app;
		const org = crypto.randomUUID();
		const [a, b, c, d] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
		const hooked: number[] = [];
		// No NUL byte here: bulkCreate inlines escaped values on SQLite, which a NUL cuts short (rows.ts binds them).
		const link = (id: string) => ({ ...linkValues(id, `pl_${id}`, org), title: "Order 'quoted' \\ \"1234\" ñ" });
		models.PaymentLink.addHook("afterBulkCreate", "rows-test", (rows: readonly unknown[]) => void hooked.push(rows.length));
		try {
			await sequelize.transaction(async t => {
				await models.PaymentLink.bulkCreate([link(a), link(b)], { transaction: t });
				await insertRows(models.PaymentLink, [link(c), link(d)], t);
			});
		} finally {
			models.PaymentLink.removeHook("afterBulkCreate", "rows-test");
		}
		expect(hooked).toEqual([2, 2]);
		const stored = async (id: string) => ({ ...((await sequelize.query(`SELECT * FROM payment_links WHERE id = ?`, { replacements: [id], type: QueryTypes.SELECT, raw: true })) as Array<Record<string, unknown>>)[0], id: null, slug: null });
		expect(await stored(c)).toEqual(await stored(a));
		expect(await stored(d)).toEqual(await stored(b));

		// Changes: one row through the ORM's save, the same change through updateRows.
		const later = new Date(Date.UTC(2027, 5, 6, 7, 8, 9, 10));
		const change = { status: "completed" as const, amount: "007.2500", updatedAt: later, singleUse: true, title: "it's \u0000 $1 done" };
		const ormRow = (await models.PaymentLink.findByPk(a))!;
		Object.assign(ormRow, change);
		await ormRow.save();
		const [plainC, plainD] = await selectRows(models.PaymentLink, { id: [c, d].sort() }, undefined, { orderBy: "id" }).then(rows => rows.sort((x, y) => (x.id === c ? -1 : y.id === c ? 1 : 0)));
		Object.assign(plainC, change);
		plainD.status = "expired";
		await sequelize.transaction(t => updateRows(models.PaymentLink, [plainC, plainD], ["status", "amount", "updatedAt", "singleUse", "title"], t));
		expect(await stored(c)).toEqual(await stored(a));
		expect((await models.PaymentLink.findByPk(d))!.status).toBe("expired");
		expect(await stored(d)).toEqual({ ...(await stored(b)), status: "expired" });

		// An auto-increment key is the database's; a column left out takes its default (or NULL).
		const txHash = `0x${crypto.randomBytes(32).toString("hex")}`;
		const credit = { networkId: crypto.randomUUID(), txHash, transactionId: crypto.randomUUID(), tokenId: crypto.randomUUID(), amount: "1.50", counted: true, confirmations: 3, simulated: false, blockHash: null, createdAt: created };
		await sequelize.transaction(async t => {
			await models.TransactionCredit.bulkCreate([{ ...credit, logIndex: 0 }], { transaction: t });
			await insertRows(models.TransactionCredit, [{ ...credit, logIndex: 1 }], t);
		});
		const credits = await models.TransactionCredit.findAll({ where: { txHash }, order: [["logIndex", "ASC"]] });
		expect(credits).toHaveLength(2);
		const { id: id0, logIndex: _0, ...first } = credits[0].get({ plain: true });
		const { id: id1, logIndex: _1, ...second } = credits[1].get({ plain: true });
		expect(second).toEqual(first);
		expect(second).toMatchObject({ amount: "1.5", reversedAt: null, reversals: 0, counted: true });
		expect(id1).toBeGreaterThan(id0);
	});
});
