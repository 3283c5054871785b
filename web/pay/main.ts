/**
 * The hosted pay page (docs/pay-page.md). Renders from the JSON the gateway puts in the page
 * (#pay-boot), talks only to the gateway: /api/v1 for quote, checkout and simulation,
 * /pay/<slug>/events (server-sent events) for live status, /pay/<slug>/status as the polling
 * fallback. No framework: a few DOM helpers keep the first load small.
 */
import qrcode from "qrcode-generator";
import { Key, Lang, pickLang, translator } from "./i18n";
import type { PayOption } from "./types";
import { countdown, isFinal, linkState, PayState, payState, StatusPayload } from "./state";
import { erc20TransferData, fromBaseUnits, paymentUri, toBaseUnits, trimAmount } from "./uri";


interface Boot {
	apiBase: string;
	page: {
		link: { id: string; title: string; slug: string; amount: string; tokenId: string; networkId: string; status: string; expiresAt: string | null };
		description: string | null;
		sandbox: boolean;
		returnUrl: string | null;
		cancelUrl: string | null;
		intentStatus: string | null;
		options: PayOption[];
	};
}

interface Quote {
	originalAmount: string;
	supportAmount: string;
	originalTokenSymbol: string;
	payerTokenSymbol: string;
	bridgeFeeInPayerToken: string;
	originalAmountInPayerToken: string;
	totalAmount: string;
	requiresBridge: boolean;
}

interface Eip1193 {
	request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

const boot = JSON.parse((document.getElementById("pay-boot") as HTMLElement).textContent || "{}") as Boot;
const { page } = boot;
const slug = page.link.slug;
const lang: Lang = pickLang(location.search, navigator.languages || [navigator.language]);
const t = translator(lang);
document.documentElement.lang = lang;
const app = document.getElementById("app") as HTMLElement;
const storageKey = `pay:${slug}`;

type Child = Node | string | null | undefined | false;
function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean | ((e: Event) => void)> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
	const el = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) {
		if (typeof v === "function") el.addEventListener(k.slice(2), v);
		else if (v === true) el.setAttribute(k, "");
		else if (v !== false) el.setAttribute(k, v);
	}
	for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
	return el;
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
	const res = await fetch(`${boot.apiBase}${path}`, {
		method,
		headers: { "Content-Type": "application/json", "x-custom-lang": lang },
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const json = await res.json().catch(() => ({}));
	if (!res.ok) throw new Error((json && json.message) || `HTTP ${res.status}`);
	return json as T;
}

const optionOf = (tokenId: string) => page.options.find(o => o.tokenId === tokenId) || page.options[0];
const linkOption = optionOf(page.link.tokenId);

// --- Frame: banner, merchant, amount; `body` is what changes below it.
const status = h("p", { id: "status", role: "status", "aria-live": "polite", class: "status" });
const body = h("div", { id: "body" });
const banner = page.sandbox ? h("p", { class: "banner", role: "note", id: "sandbox-banner" }) : null;
/**
 * The sandbox banner for the network being paid on: where a watcher follows it (a test chain, the
 * local dev chain), test coins really move and are credited; elsewhere only the simulation works.
 */
function showBanner(o: PayOption): void {
	if (banner) banner.textContent = t(o.watched ? "testMode" : "testModeSimulated", { network: o.networkName });
}
/** The plain "only simulation works here" note of a sandbox checkout on an unwatched network (none otherwise). */
const simulationOnly = (o: PayOption): Node[] => (page.sandbox && !o.watched ? [h("p", { class: "banner", role: "note", id: "simulation-only" }, t("simulationOnly"))] : []);

function frame(): void {
	showBanner(linkOption);
	const parts: Child[] = [
		banner,
		h("h1", { id: "title" }, page.link.title),
		h("p", { class: "amount", id: "amount" }, `${trimAmount(page.link.amount)} ${t("onNetwork", { token: linkOption.symbol, network: linkOption.networkName })}`),
		page.description ? h("p", { class: "muted", id: "description" }, page.description) : null,
		status,
		body,
	];
	app.replaceChildren(...parts.filter((p): p is Node => p instanceof Node));
	app.removeAttribute("aria-busy");
}

function say(key: Key, vars?: Record<string, string | number>, tone = ""): void {
	status.textContent = t(key, vars);
	status.className = `status ${tone}`;
}

// --- Choosing the token, the support and the quote.
const SUPPORT_CHOICES = ["0", "0.5", "1", "2"];
function chooser(): void {
	const select = h("select", { id: "token", name: "token" }) as HTMLSelectElement;
	for (const o of page.options) select.append(h("option", { value: o.tokenId }, t("onNetwork", { token: o.symbol, network: o.networkName })));
	select.value = linkOption.tokenId;
	// The payer's optional support for the project (decisions: 0 to 10 percent, 0 by default).
	const support = h("select", { id: "support", name: "support", "aria-describedby": "support-hint" }) as HTMLSelectElement;
	for (const p of SUPPORT_CHOICES) support.append(h("option", { value: p }, `${p} %`));
	support.value = "0";
	const quoteBox = h("dl", { id: "quote", class: "quote" });
	const go = h("button", { type: "button", id: "continue", class: "primary", disabled: true }, t("continue")) as HTMLButtonElement;
	let seq = 0;
	const requote = async () => {
		const mine = ++seq;
		go.disabled = true;
		quoteBox.replaceChildren(h("dd", { class: "muted" }, t("quoteLoading")));
		const o = optionOf(select.value);
		try {
			const q = await api<Quote>("POST", `/payments/links/${slug}/quote`, { payerTokenId: o.tokenId, payerNetworkId: o.networkId, supportPercent: support.value });
			if (mine !== seq) return;
			// One <div> a row (a valid <dl> group): the total's rule is drawn by its row, not by two cells.
			const row = (label: string, value: string, id: string, cls = "quote-row") => h("div", { class: cls }, h("dt", {}, label), h("dd", { id }, `${trimAmount(value)} ${q.payerTokenSymbol}`));
			quoteBox.replaceChildren(
				row(t("amount"), q.originalAmountInPayerToken, "quote-amount"),
				row(t("supportFee"), q.supportAmount === "0" ? "0" : supportInPayer(q), "quote-support"),
				row(t("bridgeFee"), q.bridgeFeeInPayerToken, "quote-bridge"),
				row(t("total"), q.totalAmount, "quote-total", "quote-row total"),
			);
			go.disabled = false;
		} catch (err) {
			if (mine !== seq) return;
			quoteBox.replaceChildren(h("dd", { class: "error", role: "alert" }, t("error", { error: (err as Error).message })));
		}
	};
	select.addEventListener("change", () => {
		showBanner(optionOf(select.value));
		void requote();
	});
	support.addEventListener("change", () => void requote());
	go.addEventListener("click", () => void startCheckout(optionOf(select.value), support.value, go));
	body.replaceChildren(
		h("label", { for: "token" }, t("payWith")),
		select,
		h("label", { for: "support" }, t("supportChoice")),
		support,
		h("p", { id: "support-hint", class: "muted hint" }, t("supportHint")),
		quoteBox,
		go,
	);
	say("waiting");
	status.textContent = "";
	void requote();
}

/** The support fee in the payer's token: what the total holds beyond amount and bridge fee. */
function supportInPayer(q: Quote): string {
	const scale = Math.max(...[q.totalAmount, q.originalAmountInPayerToken, q.bridgeFeeInPayerToken].map(s => (s.split(".")[1] || "").length));
	const units = (s: string) => toBaseUnits(s, scale);
	return fromBaseUnits(units(q.totalAmount) - units(q.originalAmountInPayerToken) - units(q.bridgeFeeInPayerToken), scale);
}

async function startCheckout(o: PayOption, supportPercent: string, button: HTMLButtonElement): Promise<void> {
	button.disabled = true;
	try {
		const tx = await api<{ id: string }>("POST", `/payments/links/${slug}/transactions`, { payerTokenId: o.tokenId, payerNetworkId: o.networkId, supportPercent });
		remember(tx.id);
		await follow(tx.id);
	} catch (err) {
		button.disabled = false;
		say("error", { error: (err as Error).message }, "error");
	}
}

/** The checkout id lives in the URL (reloads, shared tabs) and in sessionStorage (reload of the bare link). */
function remember(id: string): void {
	try {
		sessionStorage.setItem(storageKey, id);
	} catch {
		/* storage disabled: the URL still has it */
	}
	history.replaceState(null, "", `/pay/${encodeURIComponent(slug)}/checkout?transaction=${encodeURIComponent(id)}${lang ? `&lang=${lang}` : ""}`);
}

function remembered(): string | null {
	const fromUrl = new URLSearchParams(location.search).get("transaction");
	if (fromUrl) return fromUrl;
	try {
		return sessionStorage.getItem(storageKey);
	} catch {
		return null;
	}
}

// --- The payment: address, QR, countdown, live status.
let timer: number | undefined;
let rendered: string | null = null;
let ended = false;

function qrSvg(text: string, label: string): SVGSVGElement {
	const qr = qrcode(0, "M");
	qr.addData(text);
	qr.make();
	const n = qr.getModuleCount();
	const ns = "http://www.w3.org/2000/svg";
	const svg = document.createElementNS(ns, "svg");
	svg.setAttribute("viewBox", `-4 -4 ${n + 8} ${n + 8}`);
	svg.setAttribute("role", "img");
	svg.setAttribute("aria-label", label);
	svg.setAttribute("id", "qr");
	svg.setAttribute("shape-rendering", "crispEdges");
	const bg = document.createElementNS(ns, "rect");
	for (const [k, v] of [["x", "-4"], ["y", "-4"], ["width", String(n + 8)], ["height", String(n + 8)], ["fill", "#fff"]]) bg.setAttribute(k, v);
	let d = "";
	for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) if (qr.isDark(r, c)) d += `M${c} ${r}h1v1h-1z`;
	const path = document.createElementNS(ns, "path");
	path.setAttribute("d", d);
	path.setAttribute("fill", "#000");
	svg.append(bg, path);
	svg.dataset.uri = text;
	return svg;
}

/** What a token's asset id is called on its chain (contract, mint, jetton master, asset id, denom, metadata address). */
function assetLabel(chainType: string): Key {
	switch (chainType) {
		case "solana":
			return "assetMint";
		case "ton":
			return "assetJetton";
		case "polkadot":
			return "assetId";
		case "cosmos":
			return "assetDenom";
		case "move":
			return "assetMetadata";
		default:
			return "assetContract";
	}
}

/** A labelled value in `<code id=id>` with its copy button (clipboard API, else a selection and execCommand). */
function copyRow(id: string, label: string, value: string, buttonId: string, buttonText: string, done: string): Node[] {
	const button = h("button", { type: "button", id: buttonId }, buttonText);
	const code = h("code", { id, "aria-labelledby": `${id}-label` }, value);
	button.addEventListener("click", async () => {
		try {
			await navigator.clipboard.writeText(value);
		} catch {
			const sel = getSelection();
			const range = document.createRange();
			range.selectNodeContents(code);
			sel?.removeAllRanges();
			sel?.addRange(range);
			document.execCommand("copy");
		}
		status.textContent = done;
		status.className = "status";
	});
	return [h("p", { class: "label", id: `${id}-label` }, label), h("p", { class: "address-row" }, code, button)];
}

function paymentView(s: StatusPayload): void {
	const tx = s.transaction;
	const o = page.options.find(x => x.tokenId === tx.payerTokenId) || optionOf(tx.payerTokenId);
	const uri = paymentUri({ uriScheme: o.uriScheme, chainId: o.chainId, address: tx.depositAddress, amount: s.amountDue, decimals: o.decimals, contractAddress: o.contractAddress, isNative: o.isNative });
	const due = trimAmount(s.amountDue);
	const asset = o.isNative ? "" : o.contractAddress;
	const clock = h("p", { class: "countdown" }, `${t("timeLeft")}: `, h("time", { id: "countdown" }));
	const actions = h("div", { class: "actions" });
	const provider = (window as unknown as { ethereum?: Eip1193 }).ethereum;
	if (provider && o.chainType === "evm") {
		const b = h("button", { type: "button", id: "wallet", class: "primary" }, t("payWithWallet")) as HTMLButtonElement;
		b.addEventListener("click", () => void payWithWallet(provider, o, tx.depositAddress, s.amountDue, b));
		actions.append(b);
	}
	if (page.sandbox) {
		const b = h("button", { type: "button", id: "simulate" }, t("simulate")) as HTMLButtonElement;
		b.addEventListener("click", async () => {
			b.disabled = true;
			b.textContent = t("simulating");
			try {
				update(await api<StatusPayload["transaction"]>("POST", `/payments/links/${slug}/simulate`, { transactionId: tx.id }).then(() => fetchStatus(tx.id)));
			} catch (err) {
				b.disabled = false;
				b.textContent = t("simulate");
				say("error", { error: (err as Error).message }, "error");
			}
		});
		actions.append(b);
	}
	showBanner(o);
	body.replaceChildren(
		...simulationOnly(o),
		h("p", { class: "due", id: "due" }, t("sendExactly", { amount: due, token: o.symbol, network: o.networkName })),
		h("div", { class: "qr" }, qrSvg(uri, t("qrLabel", { address: tx.depositAddress }))),
		// The same URI as a link, for a payer whose wallet app is on this device.
		...(o.uriScheme ? [h("p", { class: "wallet-link" }, h("a", { href: uri, id: "wallet-link" }, t("openInWallet")))] : []),
		...copyRow("address", t("depositAddress"), tx.depositAddress, "copy", t("copy"), t("copied")),
		// Where wallets read no payment URI (the QR code is the address alone), the payer types the
		// amount and picks the asset: both are shown exactly, with copy buttons.
		...(o.uriScheme ? [] : [h("p", { class: "banner", role: "note", id: "exact-note" }, t("exactNote", { amount: due, token: o.symbol }))]),
		...(o.uriScheme ? [] : copyRow("exact-amount", t("amountToSend"), due, "copy-amount", t("copyAmount"), t("amountCopied"))),
		...(asset ? copyRow("asset", t(assetLabel(o.chainType), { token: o.symbol }), asset, "copy-asset", t("copyAsset"), t("assetCopied")) : []),
		clock,
		actions,
	);
	const expires = Date.parse(tx.expiresAt);
	const tick = () => {
		const el = document.getElementById("countdown");
		if (el) {
			el.textContent = countdown(expires, Date.now());
			el.setAttribute("datetime", tx.expiresAt);
		}
	};
	tick();
	clearInterval(timer);
	timer = window.setInterval(tick, 1000);
}

async function payWithWallet(provider: Eip1193, o: PayOption, to: string, amount: string, button: HTMLButtonElement): Promise<void> {
	button.disabled = true;
	try {
		const [from] = (await provider.request({ method: "eth_requestAccounts" })) as string[];
		const chainHex = `0x${o.chainId.toString(16)}`;
		if ((await provider.request({ method: "eth_chainId" })) !== chainHex) {
			await provider.request({ method: "wallet_switchEthereumChain", params: [{ chainId: chainHex }] });
		}
		const units = toBaseUnits(amount, o.decimals);
		const call = o.isNative || !o.contractAddress ? { from, to, value: `0x${units.toString(16)}` } : { from, to: o.contractAddress, data: erc20TransferData(to, units) };
		await provider.request({ method: "eth_sendTransaction", params: [call] });
		say("walletSent");
	} catch (err) {
		button.disabled = false;
		say("walletFailed", { error: (err as Error).message || String(err) }, "error");
	}
}

function finalView(state: PayState): void {
	clearInterval(timer);
	ended = true;
	const url = state.kind === "paid" ? page.returnUrl : page.cancelUrl;
	const back = url ? h("a", { href: url, id: "back", class: "button" }, t("backToMerchant")) : null;
	body.replaceChildren(...(back ? [back] : []));
	if (state.kind === "paid") {
		say("paid", {}, "ok");
		if (url) {
			status.textContent = `${t("paid")} ${t("returning")}`;
			setTimeout(() => location.assign(url), 2500);
		}
	} else if (state.kind === "canceled") say("canceled", {}, "error");
	else if (state.kind === "expired") say(state.partial ? "expiredPartial" : "expired", {}, "error");
	back?.focus();
}

function update(s: StatusPayload): void {
	if (ended) return;
	const state = payState(s);
	if (isFinal(state)) return finalView(state);
	// Re-render the address block only when what it shows changed (keeps focus and selection).
	const key = `${s.transaction.depositAddress}|${s.amountDue}|${s.transaction.payerTokenId}`;
	if (key !== rendered) {
		rendered = key;
		paymentView(s);
	}
	const o = optionOf(s.transaction.payerTokenId);
	if (state.kind === "waiting") say("waiting");
	else if (state.kind === "partial") say("partial", { due: trimAmount(state.due), token: o.symbol }, "warn");
	else if (state.kind === "confirming") say("confirming", { n: state.confirmations, m: state.required }, "warn");
}

const fetchStatus = (id: string) => fetch(`/pay/${encodeURIComponent(slug)}/status?transaction=${encodeURIComponent(id)}`).then(async r => {
	if (!r.ok) throw Object.assign(new Error(`HTTP ${r.status}`), { status: r.status });
	return (await r.json()) as StatusPayload;
});

/** Live status: server-sent events, falling back to polling with backoff when they fail. */
async function follow(id: string): Promise<void> {
	update(await fetchStatus(id));
	if (ended) return;
	if (typeof EventSource !== "function") return poll(id, 1000);
	const es = new EventSource(`/pay/${encodeURIComponent(slug)}/events?transaction=${encodeURIComponent(id)}`);
	let failures = 0;
	es.addEventListener("status", e => {
		failures = 0;
		update(JSON.parse((e as MessageEvent).data) as StatusPayload);
		if (ended) es.close();
	});
	es.onerror = () => {
		if (ended) return es.close();
		failures++;
		// EventSource reconnects by itself; after repeated failures, poll instead.
		if (es.readyState === EventSource.CLOSED || failures >= 3) {
			es.close();
			say("reconnecting", {}, "warn");
			void poll(id, 1000);
		}
	};
}

async function poll(id: string, delay: number): Promise<void> {
	while (!ended) {
		await new Promise(r => setTimeout(r, delay));
		try {
			update(await fetchStatus(id));
			delay = 2000;
		} catch {
			// Exponential backoff up to 30 s while the gateway is unreachable.
			delay = Math.min(delay * 2, 30_000);
		}
	}
}

async function start(): Promise<void> {
	frame();
	const before = linkState(page.link.status, page.intentStatus);
	const saved = remembered();
	if (saved) {
		try {
			return await follow(saved);
		} catch {
			// A checkout of another link, or gone: start again.
			try {
				sessionStorage.removeItem(storageKey);
			} catch {
				/* ignore */
			}
		}
	}
	if (before) {
		if (before.kind === "paid") {
			ended = true;
			return say("alreadyPaid", {}, "ok");
		}
		return finalView(before);
	}
	if (page.link.status !== "active") return say("unavailable", {}, "error");
	chooser();
}

void start();
