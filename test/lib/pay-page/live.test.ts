/**
 * PayStreamHub: a change re-reads only the streams of the checkouts and links it names (one map
 * look-up per id, each stream once), a final state ends its stream and forgets it, and the
 * node's one safety-net poll (delays in [pollMs/2, pollMs]) reads every open checkout in one
 * batched call, writes what changed and reads alone a checkout the batch left out.
 */
import { PassThrough } from "node:stream";
import type { ServerResponse } from "node:http";
import { PayStreamHub } from "../../../lib/pay-page/live";
import type { StatusPayload } from "../../../web/pay/state";

/** What the hub uses of a response: write, end, writableEnded (a real stream collects the bytes). */
function response(): ServerResponse & { text(): string } {
	const out = new PassThrough();
	let text = "";
	out.on("data", (c: Buffer) => (text += c.toString()));
	return Object.assign(out, { text: () => text }) as unknown as ServerResponse & { text(): string };
}

function payload(id: string, linkId: string, status = "pending", amountReceived = "0"): StatusPayload {
	return {
		linkStatus: status === "completed" ? "completed" : "active",
		intentStatus: null,
		amountDue: "1",
		transaction: { id, paymentLinkId: linkId, status, totalAmount: "1", amountReceived, amountConfirming: "0", confirmations: null, requiredConfirmations: null, depositAddress: "0xa", expiresAt: new Date(Date.now() + 3_600_000).toISOString(), payerTokenId: "t", payerNetworkId: "n", hash: null } as StatusPayload["transaction"],
	};
}

const tick = () => new Promise(r => setImmediate(r));

describe("PayStreamHub", () => {
	let hub: PayStreamHub;
	afterEach(() => hub?.closeAll());

	it("wakes only the streams named by checkout or link, each once", async () => {
		hub = new PayStreamHub({ pollMs: 600_000, heartbeatMs: 600_000, maxMs: 600_000, readMany: async () => [] });
		const reads = { a: 0, b: 0, c: 0 };
		const state: Record<string, StatusPayload> = { a: payload("tx-a", "link-1"), b: payload("tx-b", "link-1"), c: payload("tx-c", "link-2") };
		const res: Record<string, ReturnType<typeof response>> = {};
		for (const k of ["a", "b", "c"] as const) {
			res[k] = response();
			hub.open(res[k], state[k], async () => {
				reads[k]++;
				return state[k];
			});
		}
		expect(hub.size).toBe(3);
		expect(hub.wake({ transactionIds: ["tx-a", "tx-unknown"] })).toBe(1);
		await tick();
		expect(reads).toEqual({ a: 1, b: 0, c: 0 });
		// The checkout and its link named in one change: one read.
		expect(hub.wake({ transactionIds: ["tx-b"], linkIds: ["link-1"] })).toBe(2);
		await tick();
		expect(reads).toEqual({ a: 2, b: 1, c: 0 });
		expect(hub.wake({ transactionIds: "tx-c", linkIds: [42] })).toBe(0);

		// A change is written once; an unchanged read writes nothing.
		state.c = payload("tx-c", "link-2", "pending", "0.5");
		hub.wake({ linkIds: ["link-2"] });
		await tick();
		hub.wake({ linkIds: ["link-2"] });
		await tick();
		expect(res.c.text().match(/event: status/g)).toHaveLength(2);
		expect(res.c.text()).toContain(`data: ${JSON.stringify(state.c)}\n\n`);

		// Final: the stream ends and leaves the maps.
		state.a = payload("tx-a", "link-1", "completed", "1");
		hub.wake({ transactionIds: ["tx-a"] });
		await tick();
		expect(res.a.writableEnded).toBe(true);
		expect(hub.size).toBe(2);
		expect(hub.wake({ transactionIds: ["tx-a"] })).toBe(0);
	});

	it("reads again after a read in flight when woken meanwhile", async () => {
		hub = new PayStreamHub({ pollMs: 600_000, heartbeatMs: 600_000, maxMs: 600_000, readMany: async () => [] });
		let reads = 0;
		let release: () => void = () => undefined;
		hub.open(response(), payload("tx", "l"), () => {
			reads++;
			return new Promise<StatusPayload>(r => (release = () => r(payload("tx", "l"))));
		});
		hub.wake({ transactionIds: ["tx"] });
		hub.wake({ transactionIds: ["tx"] });
		hub.wake({ transactionIds: ["tx"] });
		expect(reads).toBe(1);
		release();
		await tick();
		// The three wakes during one read cost one more read, not three.
		expect(reads).toBe(2);
		release();
		await tick();
		expect(reads).toBe(2);
	});

	it("polls every open checkout in one batched read per node, every [pollMs/2, pollMs]", async () => {
		jest.useFakeTimers();
		try {
			for (const [r, due] of [
				[0, 500],
				[0.999, 1000],
			] as const) {
				const batches: string[][] = [];
				const state: Record<string, StatusPayload> = { "tx-1": payload("tx-1", "l"), "tx-2": payload("tx-2", "l") };
				const single: string[] = [];
				hub = new PayStreamHub({
					pollMs: 1000,
					heartbeatMs: 600_000,
					maxMs: 600_000,
					random: () => r,
					// tx-2 is left out of the batch (as an expiry due is): it is read alone.
					readMany: async ids => {
						batches.push(ids);
						return ids.filter(id => id !== "tx-2").map(id => state[id]);
					},
				});
				const res1 = response();
				hub.open(res1, state["tx-1"], async () => state["tx-1"]);
				hub.open(response(), state["tx-2"], async () => {
					single.push("tx-2");
					return state["tx-2"];
				});
				state["tx-1"] = payload("tx-1", "l", "pending", "0.5");
				jest.advanceTimersByTime(due - 2);
				expect(batches).toEqual([]);
				jest.advanceTimersByTime(2);
				await jest.advanceTimersByTimeAsync(0);
				expect(batches).toEqual([["tx-1", "tx-2"]]);
				expect(single).toEqual(["tx-2"]);
				// The batch's newer payload was written.
				expect(res1.text()).toContain(`data: ${JSON.stringify(state["tx-1"])}\n\n`);
				hub.closeAll();
			}
		} finally {
			jest.useRealTimers();
		}
	});

	it("does not write a batch's payload over a read of the stream's own that began after it", async () => {
		let answer: (p: StatusPayload[]) => void = () => undefined;
		hub = new PayStreamHub({ pollMs: 1, heartbeatMs: 600_000, maxMs: 600_000, random: () => 0, readMany: () => new Promise(r => (answer = r)) });
		const res = response();
		const current = payload("tx", "l", "pending", "0.2");
		hub.open(res, payload("tx", "l"), async () => current);
		await new Promise(r => setTimeout(r, 20));
		// The poll is in flight; a change is heard and read (newer than what the poll read).
		hub.wake({ transactionIds: ["tx"] });
		await tick();
		answer([payload("tx", "l", "pending", "0.1")]);
		await tick();
		expect(res.text()).toContain('"amountReceived":"0.2"');
		expect(res.text()).not.toContain('"amountReceived":"0.1"');
	});
});
