import { networkReadiness, watchersCheck } from "../../../lib/watchers/readiness";

const NOW = 1_000_000;
const leading = { slug: "ethereum", leader: true, lag: 3, rpcDown: false };

describe("watcher readiness per network", () => {
	it("a standby is ready, whatever its last numbers", () => {
		expect(networkReadiness({ slug: "ethereum", leader: false, lag: 900, rpcDown: true }, null, NOW, 50)).toEqual({ slug: "ethereum", leader: false, lag: 900, ok: true });
	});

	it("a leader with the lease held and the lag at most the maximum is ready", () => {
		expect(networkReadiness(leading, NOW + 5_000, NOW, 50)).toEqual({ slug: "ethereum", leader: true, lag: 3, ok: true });
		expect(networkReadiness({ ...leading, lag: 50 }, NOW + 1, NOW, 50).ok).toBe(true);
	});

	it("a leader behind by more than the maximum is not ready", () => {
		expect(networkReadiness({ ...leading, lag: 51 }, NOW + 5_000, NOW, 50)).toEqual({ slug: "ethereum", leader: true, lag: 51, ok: false, reason: "51 blocks behind the head (over 50)" });
	});

	it("a leader whose lease was not renewed in time is not ready", () => {
		expect(networkReadiness(leading, NOW, NOW, 50)).toMatchObject({ ok: false, reason: "lease not renewed in time" });
		expect(networkReadiness(leading, null, NOW, 50)).toMatchObject({ ok: false, reason: "lease not renewed in time" });
	});

	it("a leader that has not read a block yet, or whose RPC is down, is not ready", () => {
		expect(networkReadiness({ ...leading, lag: null }, NOW + 5_000, NOW, 50)).toMatchObject({ ok: false, reason: "no block read yet" });
		expect(networkReadiness({ ...leading, rpcDown: true }, NOW + 5_000, NOW, 50)).toMatchObject({ ok: false, reason: "RPC unreachable" });
	});
});

describe("the node's watchers check", () => {
	it("passes when every network of every watcher service passes, listing each with its role and lag", () => {
		expect(watchersCheck([])).toEqual({ ok: true, networks: [] });
		expect(
			watchersCheck([
				{ chainType: "evm", networks: [{ slug: "b", leader: false, lag: null, ok: true }, { slug: "a", leader: true, lag: 2, ok: true }], error: null },
				{ chainType: "bitcoin", networks: [{ slug: "bitcoin", leader: true, lag: 0, ok: true }], error: null },
			]),
		).toEqual({
			ok: true,
			networks: [
				{ slug: "a", chainType: "evm", role: "leader", lag: 2 },
				{ slug: "b", chainType: "evm", role: "standby", lag: null },
				{ slug: "bitcoin", chainType: "bitcoin", role: "leader", lag: 0 },
			],
		});
	});

	it("names each failing network and a watcher that could not read its networks", () => {
		expect(
			watchersCheck([
				{ chainType: "evm", networks: [{ slug: "a", leader: true, lag: 7, ok: false, reason: "RPC unreachable" }, { slug: "b", leader: true, lag: 1, ok: true }], error: null },
				{ chainType: "bitcoin", networks: [], error: "bitcoin networks could not be read" },
			]),
		).toEqual({
			ok: false,
			error: "a: RPC unreachable; bitcoin networks could not be read",
			networks: [
				{ slug: "a", chainType: "evm", role: "leader", lag: 7 },
				{ slug: "b", chainType: "evm", role: "leader", lag: 1 },
			],
		});
	});
});
