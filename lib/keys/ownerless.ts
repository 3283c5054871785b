/**
 * What deleting a user does to the organizations they own (docs/organizations-and-keys.md
 * "Users"): an organization left without an owner keeps its data and members, but its API keys
 * are revoked, so no key keeps working on behalf of an account that no longer exists. Run inside
 * the deletion's transaction, before the user row changes; the caller announces the revoked keys
 * to every gateway after the commit (`announceKeysChanged`).
 */
import { Op, Transaction } from "sequelize";
import type { Models } from "../../models";

/** Ids of the keys revoked: the active keys of every organization `userId` was the last owner of. */
export async function revokeKeysOfOrganizationsLeftWithoutOwner(models: Models, userId: number, now: Date, t: Transaction): Promise<number[]> {
	const owned = await models.Membership.findAll({ where: { userId, role: "owner" }, attributes: ["organizationId"], transaction: t });
	if (owned.length === 0) return [];
	const organizationIds = [...new Set(owned.map(m => m.organizationId))];
	// Locked first (MySQL; SQLite's IMMEDIATE transaction already holds the write lock): two co-owners
	// deleted at once are serialised here, and the second one sees the first as deleted.
	await models.Organization.findAll({ where: { id: organizationIds }, attributes: ["id"], transaction: t, lock: t.LOCK.UPDATE });
	const others = await models.Membership.findAll({
		where: { organizationId: organizationIds, role: "owner", userId: { [Op.ne]: userId } },
		attributes: ["organizationId", "userId"],
		transaction: t,
	});
	// A locking read sees deletions committed meanwhile; deleted users (paranoid) are not returned.
	const live = others.length
		? new Set((await models.User.findAll({ where: { id: [...new Set(others.map(m => m.userId))] }, attributes: ["id"], transaction: t, lock: t.LOCK.UPDATE })).map(u => Number(u.id)))
		: new Set<number>();
	const stillOwned = new Set(others.filter(m => live.has(Number(m.userId))).map(m => m.organizationId));
	const ownerless = organizationIds.filter(id => !stillOwned.has(id));
	if (ownerless.length === 0) return [];
	const keys = await models.ApiKey.findAll({ where: { organizationId: ownerless, status: "active" }, attributes: ["id"], transaction: t });
	const ids = keys.map(k => Number(k.id));
	if (ids.length > 0) await models.ApiKey.update({ status: "revoked", revokedAt: now }, { where: { id: ids, status: "active" }, transaction: t });
	return ids;
}
