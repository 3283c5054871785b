/**
 * `npm run chain:check` on Polkadot networks (lib/chains/polkadot/check.ts through the dispatcher
 * lib/chains/check.ts): its arguments, and a run against the chopsticks Asset Hub node
 * (test/helpers/polkadot-node.ts) as `westend-asset-hub`: a native payment found, in the network's
 * SS58 form, finalized or not as the node says; a failed extrinsic and the block's collator reward
 * not listed.
 */
import { chainCheck } from "../../../../lib/chains/check";
import { parsePolkadotChainCheckArgs } from "../../../../lib/chains/polkadot/check";
import { startPolkadotNode, USDT, type PolkadotNode } from "../../../helpers/polkadot-node";

/** A Westend (generic prefix 42) address. */
const WESTEND = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
const POLKADOT = "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5";

describe("chain:check arguments (Polkadot)", () => {
	const env = { RPC_URL_WESTEND_ASSET_HUB: "wss://westend.example/rpc" };

	it("reads the node URL, the block count and the addresses in the network's SS58 form", () => {
		expect(parsePolkadotChainCheckArgs(["westend-asset-hub", "--blocks", "3", "--address", WESTEND], env)).toMatchObject({ rpcUrl: "wss://westend.example/rpc", blocks: 3, addresses: [WESTEND] });
		expect(parsePolkadotChainCheckArgs(["westend-asset-hub"], env)).toMatchObject({ blocks: 10, addresses: null });
		expect(parsePolkadotChainCheckArgs(["polkadot-asset-hub", "--rpc-url", "ws://127.0.0.1:9944", "--address", POLKADOT], {}).addresses).toEqual([POLKADOT]);
	});

	it("refuses what it cannot check, saying why", () => {
		// A Polkadot (prefix 0) address is not a Westend deposit.
		expect(() => parsePolkadotChainCheckArgs(["westend-asset-hub", "--address", POLKADOT], env)).toThrow(/is not an address of westend-asset-hub \(SS58 prefix 42\)/);
		expect(() => parsePolkadotChainCheckArgs(["polkadot-asset-hub"], {})).toThrow(/set RPC_URL_POLKADOT_ASSET_HUB or give --rpc-url/);
		expect(() => parsePolkadotChainCheckArgs(["polkadot-asset-hub", "--rpc-url", "https://rpc.example"], {})).toThrow(/must be a ws\(s\) URL/);
		expect(() => parsePolkadotChainCheckArgs(["ethereum"], env)).toThrow(/is evm, not a Polkadot network/);
	});

	it("the one command dispatches Polkadot networks here", async () => {
		await expect(chainCheck(["--blocks", "2", "polkadot-asset-hub"], {}, () => undefined)).rejects.toThrow(/set RPC_URL_POLKADOT_ASSET_HUB/);
		await expect(chainCheck(["ethereum"], {}, () => undefined)).rejects.toThrow(/reads solana, ton, polkadot networks so far; "ethereum" is evm/);
	});
});

describe("chain:check against the chopsticks Asset Hub node", () => {
	let dot: PolkadotNode;

	beforeAll(async () => {
		dot = await startPolkadotNode({ autoFinalize: false });
	}, 300_000);

	afterAll(async () => {
		await dot?.stop();
	});

	it("lists the payment to the address as the watcher would find it, finalized or not", async () => {
		const payer = dot.pair("//CheckPayer");
		const poor = dot.pair("//CheckPoor");
		const deposit = dot.pair("//CheckDeposit", "ed25519");
		await dot.fund(payer.address, 10n ** 15n);
		await dot.fund(poor.address, 10n ** 12n);
		await dot.mintAsset(USDT.id, poor.address, 1_000n);
		// chopsticks now and then fails to build a block ("slot number mismatch" in the runtime's
		// aura-ext hook, the pool emptied): the head does not move, and the extrinsics are sent again.
		let paid = await dot.head();
		for (let attempt = 0; attempt < 3; attempt++) {
			const before = await dot.head();
			await dot.api.tx.balances.transferKeepAlive(deposit.address, 12_345_000_000n).signAndSend(payer);
			// Fails (over its balance): not a payment.
			await dot.api.tx.assets.transfer(USDT.id, deposit.address, 5_000n).signAndSend(poor);
			paid = await dot.newBlock();
			if (paid.number > before.number) break;
		}
		await dot.finalize(paid.number);
		const unfinalized = await dot.newBlock();
		const lines: string[] = [];
		const westendDeposit = dot.keyring.encodeAddress(deposit.publicKey, 42);
		await chainCheck(["westend-asset-hub", "--blocks", "2", "--rpc-url", dot.url, "--address", westendDeposit], {}, line => lines.push(line));
		const text = lines.join("\n");
		expect(lines[0]).toMatch(new RegExp(`^westend-asset-hub: runtime statemine 1000000; best block ${unfinalized.number}, finalized ${paid.number}; reading 2 block\\(s\\)`));
		expect(text).toContain(`block ${paid.number} ${paid.hash}:`);
		// WND has 12 decimals, as the test runtime's token.
		expect(text).toMatch(new RegExp(`payments: 1\\n  0\\.012345 WND to ${westendDeposit} \\(event \\d+\\)`));
		expect(text).toMatch(new RegExp(`block ${unfinalized.number} 0x[0-9a-f]{64}: \\d+ event\\(s\\); payments: 0 \\(not finalized\\)`));
		expect(lines[lines.length - 1]).toMatch(/^1 payment\(s\) in 2 block\(s\)/);

		// Without --address: every receiver of a native transfer by an extrinsic (not the collator's reward).
		const all: string[] = [];
		await chainCheck(["westend-asset-hub", "--blocks", "2", "--rpc-url", dot.url], {}, line => all.push(line));
		expect(all.filter(l => l.startsWith("  "))).toEqual([expect.stringMatching(new RegExp(`^  0\\.012345 WND to ${westendDeposit} `))]);
	});
});
