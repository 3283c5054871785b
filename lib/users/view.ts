/** The public form of a user, the same in /auth/me, login responses and /users. Never carries secrets. */
import type { User } from "../../models/user.model";

export interface UserView {
	id: number;
	email: string | null;
	firstName: string | null;
	lastName: string | null;
	role: string;
	status: string;
	provider: string;
	emailConfirmed: boolean;
	photoId: string | null;
	createdAt: string;
	updatedAt: string;
}

export function toUserView(user: User): UserView {
	return {
		id: Number(user.id),
		email: user.email,
		firstName: user.firstName,
		lastName: user.lastName,
		role: user.role,
		status: user.status,
		provider: user.provider,
		emailConfirmed: !!user.emailConfirmedAt,
		photoId: user.photoId ?? null,
		createdAt: new Date(user.createdAt).toISOString(),
		updatedAt: new Date(user.updatedAt).toISOString(),
	};
}
