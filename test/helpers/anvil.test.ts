/**
 * The test chain's provider (test/helpers/anvil.ts): its block events include the head seen when a
 * listener subscribes, so a `wait()` whose transaction was mined just before cannot hang.
 */
import { Wallet } from "ethers";
import { startAnvil, type Anvil } from "./anvil";

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeChain = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

describeChain("anvil test provider", () => {
	let anvil: Anvil;
	beforeAll(async () => {
		anvil = await startAnvil();
	});
	afterAll(async () => {
		await anvil?.stop();
	});

	it("emits the head block to a listener that subscribes after it was mined (ethers' poller would only emit later blocks)", async () => {
		await anvil.mine(3);
		const head = await anvil.blockNumber();
		// No block is mined after this point: only the head at subscription can be emitted.
		const seen = await new Promise<number>((resolve, reject) => {
			const timer = setTimeout(() => reject(new Error("no block event for the current head")), 20_000);
			void anvil.provider.once("block", (n: number) => {
				clearTimeout(timer);
				resolve(n);
			});
		});
		expect(seen).toBe(head);
	});

	it("wait() of a transaction already mined resolves, and waitForTransaction too", async () => {
		const sent = await anvil.accounts[0].sendTransaction({ to: Wallet.createRandom().address, value: 1n });
		const receipt = await sent.wait();
		expect(receipt?.status).toBe(1);
		expect((await anvil.provider.waitForTransaction(sent.hash))?.blockNumber).toBe(receipt?.blockNumber);
	});
});
