/**
 * chopsticks (the Polkadot test node, loaded in-process by the Polkadot tests) bootstraps
 * `global-agent` when it loads, which patches `http.request`/`https.request` for the whole process
 * and, by default, forces its own agent on every request: the explicit keep-alive agents of our
 * clients (TON's v3 client, the webhook sender) are replaced and every request goes out with
 * `Connection: close`. A jest worker runs many test files in one process, so a test file that ran
 * after a Polkadot one lost keep-alive (CI: test/lib/chains/ton/source.test.ts). With this set
 * before chopsticks loads, global-agent leaves an agent the caller passes alone. Production never
 * loads chopsticks (a dev dependency).
 */
process.env.GLOBAL_AGENT_FORCE_GLOBAL_AGENT = "false";
