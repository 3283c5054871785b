/**
 * Users, administered: /users CRUD, admin only (decisions.md). A created user is confirmed (the
 * admin vouches for the address) and gets their default organizations. Changes that must not
 * wait for a token to expire (role, status, password, deletion) end the user's sessions at once.
 * Decisions are in docs/organizations-and-keys.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import bcrypt from "bcrypt";
import Validator from "fastest-validator";
import { Op, Transaction, UniqueConstraintError, WhereOptions, col, fn, where as sqlWhere } from "sequelize";
import { appOf } from "../lib/app";
import { badRequest, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import type { AuthMeta } from "../lib/meta";
import { FILTER_TEXT, PAGE_PARAMS, Page, pageWindow, parseFilterObject, parseSort, toPage } from "../lib/pagination";
import { toUserView, UserView } from "../lib/users/view";
import { EMAIL_RULE as EMAIL } from "../lib/users/email";
import { announceKeysChanged } from "../lib/keys/announce";
import { revokeKeysOfOrganizationsLeftWithoutOwner } from "../lib/keys/ownerless";
import { DbMixin, SharedAdapter } from "../mixins/db.mixin";
import type { User, UserRole, UserStatus } from "../models/user.model";

registerTranslations("es", {
	"User not found": "Usuario no encontrado",
	"Email already in use": "El correo electrónico ya está en uso",
	"Invalid filters": "Filtros no válidos",
});

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

interface UsersMethods {
	findUser(id: number, t?: Transaction): Promise<User>;
	emailTaken(email: string, exceptId?: number): Promise<boolean>;
	endSessions(userId: number, reason: string, t: Transaction): Promise<string[]>;
	announceEnded(ctx: Ctx<any>, sessionIds: string[]): Promise<void>;
}

type UsersThis = Service<{ rest: string }> & UsersMethods & { adapter: SharedAdapter<"User"> };

const ROLES: UserRole[] = ["admin", "user"];
const STATUSES: UserStatus[] = ["active", "inactive"];
const PASSWORD = { type: "string", min: 6, max: 128 } as const;
const NAME = { type: "string", trim: true, min: 1, max: 100 } as const;
const USER_ID = { type: "number", integer: true, positive: true, max: 2147483647, convert: true } as const;
const NO_PARAMS_IN_TRACES = { tags: { params: false } } as const;

const SORT_COLUMNS = ["id", "email", "firstName", "lastName", "role", "status", "createdAt", "updatedAt"] as const;
type SortColumn = (typeof SORT_COLUMNS)[number];

/** `filters` of GET /users: exact role/status, case-insensitive "contains" for the text fields. */
const checkFilters = new Validator().compile({
	$$strict: true,
	role: { type: "enum", values: ROLES, optional: true },
	status: { type: "enum", values: STATUSES, optional: true },
	email: { type: "string", max: 254, optional: true, pattern: FILTER_TEXT },
	firstName: { type: "string", max: 100, optional: true, pattern: FILTER_TEXT },
	lastName: { type: "string", max: 100, optional: true, pattern: FILTER_TEXT },
});

interface UserFilters {
	role?: UserRole;
	status?: UserStatus;
	email?: string;
	firstName?: string;
	lastName?: string;
}

const userNotFound = () => notFound("User not found");
const emailInUse = () => badRequest("Email already in use", { email: "emailAlreadyExists" });

function displayName(user: { firstName: string | null; lastName: string | null; email: string | null }): string {
	const full = [user.firstName, user.lastName].filter(Boolean).join(" ").trim();
	return full || (user.email ? user.email.split("@")[0] : "My organization");
}

function filterErrors(result: true | Array<{ field?: string; type?: string; actual?: unknown }>): Record<string, string> | null {
	if (result === true) return null;
	const errors: Record<string, string> = {};
	for (const item of result) {
		if (item.type === "objectStrict" && typeof item.actual === "string") {
			for (const extra of item.actual.split(", ").filter(Boolean)) errors[`filters.${extra}`] ??= "unknownField";
		} else {
			errors[item.field ? `filters.${item.field}` : "filters"] ??= item.type || "invalid";
		}
	}
	return errors;
}

/** Case-insensitive substring match without LIKE wildcards (INSTR exists on MySQL and SQLite). */
function contains(column: string, value: string) {
	return sqlWhere(fn("INSTR", fn("LOWER", col(column)), value.toLowerCase()), { [Op.gt]: 0 });
}

const UsersService: ServiceSchema<{ rest: string }, UsersMethods & Record<string, any>, { adapter: SharedAdapter<"User"> }> = {
	name: "users",
	mixins: [DbMixin("User") as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		create: {
			rest: "POST /users",
			auth: "admin",
			tracing: NO_PARAMS_IN_TRACES,
			params: {
				$$strict: "remove",
				email: EMAIL,
				password: { ...PASSWORD, optional: true },
				firstName: NAME,
				lastName: NAME,
				role: { type: "enum", values: ROLES, optional: true },
				status: { type: "enum", values: STATUSES, optional: true },
			},
			async handler(
				this: UsersThis,
				ctx: Ctx<{ email: string; password?: string; firstName: string; lastName: string; role?: UserRole; status?: UserStatus }>,
			): Promise<UserView> {
				const { config, clock } = appOf(this.broker);
				const p = ctx.params;
				if (await this.emailTaken(p.email)) throw emailInUse();
				const passwordHash = p.password ? await bcrypt.hash(p.password, config.bcryptRounds) : null;
				let user: User;
				try {
					user = await this.adapter.model.create({
						email: p.email,
						passwordHash,
						firstName: p.firstName,
						lastName: p.lastName,
						role: p.role || "user",
						status: p.status || "active",
						provider: "email",
						// Created by an admin: the address is taken as confirmed.
						emailConfirmedAt: clock.now(),
					});
				} catch (err) {
					if (err instanceof UniqueConstraintError) throw emailInUse();
					throw err;
				}
				try {
					await ctx.call("organizations.createDefaults", { userId: user.id, name: displayName(user) });
				} catch (err) {
					// No user without organizations: undo, so the admin can simply retry.
					await user.destroy({ force: true }).catch(() => undefined);
					throw err;
				}
				ctx.meta.$statusCode = 201;
				return toUserView(user);
			},
		},

		list: {
			rest: "GET /users",
			auth: "admin",
			params: {
				$$strict: "remove",
				...PAGE_PARAMS,
				filters: { type: "string", max: 2000, optional: true },
				sort: { type: "string", max: 2000, optional: true },
			},
			async handler(this: UsersThis, ctx: Ctx<{ page?: number; limit?: number; filters?: string; sort?: string }>): Promise<Page<UserView>> {
				const win = pageWindow(ctx.params.page, ctx.params.limit);
				const raw = parseFilterObject(ctx.params.filters);
				const errors = filterErrors(checkFilters(raw) as true | Array<{ field?: string; type?: string; actual?: unknown }>);
				if (errors) throw badRequest("Invalid filters", errors);
				const f = raw as UserFilters;
				const order = parseSort<SortColumn>(ctx.params.sort, SORT_COLUMNS, [["createdAt", "DESC"]]);
				// A unique last key, so pages never overlap or skip rows with equal sort values.
				if (!order.some(([c]) => c === "id")) order.push(["id", order[order.length - 1][1]]);
				const conditions: WhereOptions[] = [];
				if (f.role) conditions.push({ role: f.role });
				if (f.status) conditions.push({ status: f.status });
				if (f.email) conditions.push(contains("email", f.email));
				if (f.firstName) conditions.push(contains("firstName", f.firstName));
				if (f.lastName) conditions.push(contains("lastName", f.lastName));
				const rows = await this.adapter.model.findAll({
					where: conditions.length ? { [Op.and]: conditions } : {},
					order,
					limit: win.fetch,
					offset: win.offset,
				});
				return toPage(rows, win.limit, toUserView);
			},
		},

		get: {
			rest: "GET /users/:id",
			auth: "admin",
			params: { $$strict: "remove", id: USER_ID },
			async handler(this: UsersThis, ctx: Ctx<{ id: number }>): Promise<UserView> {
				return toUserView(await this.findUser(ctx.params.id));
			},
		},

		update: {
			rest: "PATCH /users/:id",
			auth: "admin",
			tracing: NO_PARAMS_IN_TRACES,
			params: {
				$$strict: "remove",
				id: USER_ID,
				email: { ...EMAIL, optional: true },
				password: { ...PASSWORD, optional: true },
				firstName: { ...NAME, optional: true },
				lastName: { ...NAME, optional: true },
				role: { type: "enum", values: ROLES, optional: true },
				status: { type: "enum", values: STATUSES, optional: true },
			},
			async handler(
				this: UsersThis,
				ctx: Ctx<{ id: number; email?: string; password?: string; firstName?: string; lastName?: string; role?: UserRole; status?: UserStatus }>,
			): Promise<UserView> {
				const { config, clock, sequelize } = appOf(this.broker);
				const p = ctx.params;
				const user = await this.findUser(p.id);
				const changes: Partial<User> = {};
				if (p.firstName !== undefined) changes.firstName = p.firstName;
				if (p.lastName !== undefined) changes.lastName = p.lastName;
				if (p.email !== undefined && p.email !== user.email) {
					if (await this.emailTaken(p.email, user.id)) throw emailInUse();
					Object.assign(changes, { email: p.email, pendingEmail: null, emailConfirmedAt: clock.now() });
				}
				if (p.role !== undefined && p.role !== user.role) changes.role = p.role;
				if (p.status !== undefined && p.status !== user.status) changes.status = p.status;
				if (p.password !== undefined) {
					changes.passwordHash = await bcrypt.hash(p.password, config.bcryptRounds);
					changes.passwordChangedAt = clock.now();
				}
				// Tokens carry the role, and sessions outlive a status or password change otherwise.
				const endReason =
					changes.role !== undefined ? "role_changed" : changes.status === "inactive" ? "deactivated" : changes.passwordHash !== undefined ? "password_changed" : null;
				let ended: string[] = [];
				try {
					await sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, async t => {
						if (Object.keys(changes).length > 0) await user.update(changes, { transaction: t });
						if (endReason) ended = await this.endSessions(user.id, endReason, t);
					});
				} catch (err) {
					if (err instanceof UniqueConstraintError) throw emailInUse();
					throw err;
				}
				await this.announceEnded(ctx, ended);
				return toUserView(user);
			},
		},

		remove: {
			rest: "DELETE /users/:id",
			auth: "admin",
			params: { $$strict: "remove", id: USER_ID },
			async handler(this: UsersThis, ctx: Ctx<{ id: number }>): Promise<null> {
				const { sequelize, models, clock } = appOf(this.broker);
				const user = await this.findUser(ctx.params.id);
				const { ended, revokedKeys } = await sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, async t => {
					// As DELETE /auth/me: keys of organizations left without an owner revoked (before the user row
					// changes: lock order, lib/keys/ownerless.ts), the address released (unique index); the row stays.
					const revokedKeys = await revokeKeysOfOrganizationsLeftWithoutOwner(models, user.id, clock.now(), t);
					await user.update({ email: null, pendingEmail: null }, { transaction: t });
					await user.destroy({ transaction: t });
					return { ended: await this.endSessions(user.id, "account_deleted", t), revokedKeys };
				});
				await this.announceEnded(ctx, ended);
				await announceKeysChanged(ctx, this.broker, revokedKeys, this.logger);
				ctx.meta.$statusCode = 204;
				return null;
			},
		},
	},

	methods: {
		async findUser(this: UsersThis, id: number, t?: Transaction) {
			const user = await this.adapter.model.findByPk(id, { transaction: t });
			if (!user) throw userNotFound();
			return user;
		},

		/** Deleted users release their address, so only live rows can hold one. */
		async emailTaken(this: UsersThis, email: string, exceptId?: number) {
			const found = await this.adapter.model.findOne({ where: { email }, attributes: ["id"], paranoid: false });
			return !!found && found.id !== exceptId;
		},

		/** Sessions belong to the auth service; this is the one place users ends them (same rules as auth's closeSessions). */
		async endSessions(this: UsersThis, userId: number, reason: string, t: Transaction) {
			const { models, clock } = appOf(this.broker);
			const rows = await models.Session.findAll({ where: { userId, endedAt: null }, attributes: ["id"], transaction: t });
			if (rows.length === 0) return [];
			const ids = rows.map(r => r.id);
			await models.Session.update({ endedAt: clock.now(), endReason: reason }, { where: { id: ids, endedAt: null }, transaction: t });
			return ids;
		},

		/** Every gateway drops the sessions from its 30 s cache. */
		async announceEnded(this: UsersThis, ctx: Ctx<any>, sessionIds: string[]) {
			if (sessionIds.length > 0) await ctx.broadcast("auth.sessions.ended", { sessionIds });
		},
	},
};

export default UsersService;
