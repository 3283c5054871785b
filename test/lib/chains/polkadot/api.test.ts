/**
 * What lib/chains/polkadot/api.ts parses itself (everything else is decoded by @polkadot/api with
 * the runtime's metadata): a `chain_getHeader` result. The examples are copied verbatim from
 * published JSON-RPC docs:
 * - https://www.dwellir.com/docs/polkadot/chain_getHeader ("Response Example", Polkadot)
 * - https://www.dwellir.com/docs/bifrost/chain_getHeader ("Response Example", a Polkadot parachain)
 */
import { headerFromRpc } from "../../../../lib/chains/polkadot/api";

const POLKADOT_RESPONSE = `{
"jsonrpc": "2.0",
"result": {
"parentHash": "0x4a84d1c5fc5c725b26a3c8e126d8f65e1c2d2dc5b3fcbc91e67e7637fa136789",
"number": "0x123456",
"stateRoot": "0x8f7a82e2e0f3e73f5e232e68de18144f6e7a52a6db39bb5e5e3d9ca6e1f72845",
"extrinsicsRoot": "0x2e6f9a7d2c4b3e1a8f5c6d9e4b1a7c3f8e5d2a9b6c4e1f8a5d3c2b9e7f6a4d38",
"digest": {
"logs": [
"0x0642414245b501013c0000009d2ef70f00000000",
"0x054241424501019e7b3c4e1f8a2d5c6b9e4f3a7d2c5e8b1f4a6d9c3e2b5f8a7c4d"
]
}
},
"id": 1
}`;

const PARACHAIN_RESPONSE = `{
"jsonrpc": "2.0",
"result": {
"parentHash": "0x65b246e9b69a61f842104a15307ae906013c56a8bb6c942555b1a71424b4bab3",
"number": "0x9055f2",
"stateRoot": "0x220ea5bd35df99176268d8cbcee287a8a81a2e8addfa764661f71af591db0329",
"extrinsicsRoot": "0x388e5e2bb951b1dfac3f6a3f0c1d5de1ace6e413008efe48f1a54228dcd049db",
"digest": {
"logs": [
"0x0661757261208a2c7a1100000000",
"0x0452505352903006d1651014effe612aeb9e2bed207fca849e69a1d4594bdab580afc68677458a62ad06"
]
}
},
"id": 1
}`;

const HASH = "0xd4b3a0e3b88b7c25215926bbf7c733f5c31e69c0c8c4b4a86d6ec3f3f086e95d";

describe("Polkadot chain_getHeader results (published examples)", () => {
	it("reads the number (hex) and parent hash of the docs' responses", () => {
		expect(headerFromRpc(HASH, JSON.parse(POLKADOT_RESPONSE).result)).toEqual({
			number: 0x123456, hash: HASH, parentHash: "0x4a84d1c5fc5c725b26a3c8e126d8f65e1c2d2dc5b3fcbc91e67e7637fa136789",
		});
		expect(headerFromRpc(HASH, JSON.parse(PARACHAIN_RESPONSE).result)).toEqual({
			number: 9_459_186, hash: HASH, parentHash: "0x65b246e9b69a61f842104a15307ae906013c56a8bb6c942555b1a71424b4bab3",
		});
	});

	it("refuses null (a hash the node does not know) and a header without a hex number or a 32-byte parent hash", () => {
		expect(() => headerFromRpc(HASH, null)).toThrow(/no header/);
		const result = JSON.parse(POLKADOT_RESPONSE).result;
		expect(() => headerFromRpc(HASH, { ...result, number: 1193046 })).toThrow(/malformed/);
		expect(() => headerFromRpc(HASH, { ...result, parentHash: "0x4a84" })).toThrow(/malformed/);
		expect(() => headerFromRpc(HASH, {})).toThrow(/malformed/);
	});
});
