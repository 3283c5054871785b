/**
 * Summary of a V8 .cpuprofile (written by `node --cpu-prof`): where the busy time of the process
 * went, as self time per function and self/inclusive time per package (`node_modules/<pkg>`,
 * node core, our own code). Run alone: `node dist/bench/cpu-profile.js <file.cpuprofile>`.
 */
import fs from "node:fs";

interface CallFrame {
	functionName: string;
	url: string;
	lineNumber: number;
	columnNumber: number;
}

interface ProfileNode {
	id: number;
	callFrame: CallFrame;
	children?: number[];
}

export interface CpuProfile {
	nodes: ProfileNode[];
	startTime: number;
	endTime: number;
	samples: number[];
	timeDeltas: number[];
}

export interface Row {
	name: string;
	ms: number;
	/** Share of busy time (not idle), percent. */
	pct: number;
}

export interface ProfileSummary {
	totalMs: number;
	idleMs: number;
	busyMs: number;
	gcMs: number;
	topFunctions: Row[];
	selfByPackage: Row[];
	inclusiveByPackage: Row[];
	/** Functions of our own code (dist/), inclusive of what they call synchronously. */
	inclusiveOwnCode: Row[];
}

const SPECIAL = new Set(["(idle)", "(program)", "(garbage collector)", "(root)"]);
/** On nearly every async stack (tick queue, microtasks): meaningless as inclusive time. */
const SCHEDULERS = new Set(["node:process", "(native)", "(program)"]);

/** `sequelize`, `@scope/pkg`, `node:http`, `app:services`, `(native)`, `(garbage collector)` ... */
export function packageOf(frame: CallFrame): string {
	if (SPECIAL.has(frame.functionName) && !frame.url) return frame.functionName;
	const url = frame.url.replace(/^file:\/\//, "");
	if (!url) return "(native)";
	if (url.startsWith("node:")) {
		const m = /^node:(?:internal\/)?([^/]+)/.exec(url);
		return `node:${m ? m[1] : "?"}`;
	}
	const nm = url.lastIndexOf("/node_modules/");
	if (nm >= 0) {
		const rest = url.slice(nm + "/node_modules/".length).split("/");
		return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
	}
	const dist = /\/dist\/([^/]+)\//.exec(url);
	if (dist) return `app:${dist[1]}`;
	// Run from source (the tests' TS loader): the top folder of a .ts file.
	const source = /\/(lib|services|mixins|models|migrations|bench)\/[^]*\.ts$/.exec(url);
	if (source) return `app:${source[1]}`;
	return "app";
}

function frameName(frame: CallFrame): string {
	const url = frame.url.replace(/^file:\/\//, "");
	const nm = url.lastIndexOf("/node_modules/");
	const file = nm >= 0 ? url.slice(nm + "/node_modules/".length) : url.replace(/^.*\/dist\//, "dist/").replace(/^.*\/((?:lib|services|mixins|models|migrations|bench)\/[^]*\.ts)$/, "$1");
	return `${frame.functionName || "(anonymous)"}${file ? ` ${file}:${frame.lineNumber + 1}` : ""}`;
}

function rows(map: Map<string, number>, busyMs: number, limit: number): Row[] {
	return [...map.entries()]
		.sort((a, b) => b[1] - a[1])
		.slice(0, limit)
		.map(([name, us]) => ({ name, ms: us / 1000, pct: busyMs > 0 ? (100 * us) / 1000 / busyMs : 0 }));
}

export function summarizeProfile(profile: CpuProfile, limit = 15): ProfileSummary {
	const byId = new Map<number, ProfileNode>();
	const parent = new Map<number, number>();
	for (const n of profile.nodes) {
		byId.set(n.id, n);
		for (const c of n.children || []) parent.set(c, n.id);
	}
	const selfFn = new Map<string, number>();
	const selfPkg = new Map<string, number>();
	const inclPkg = new Map<string, number>();
	const inclOwn = new Map<string, number>();
	let totalUs = 0;
	let idleUs = 0;
	let gcUs = 0;
	for (let i = 0; i < profile.samples.length; i++) {
		// timeDeltas[i] is the time between sample i-1 and i; attribute it to sample i.
		const us = Math.max(0, profile.timeDeltas[i] || 0);
		totalUs += us;
		const node = byId.get(profile.samples[i]);
		if (!node) continue;
		const fn = node.callFrame.functionName;
		if (fn === "(idle)") {
			idleUs += us;
			continue;
		}
		if (fn === "(garbage collector)") gcUs += us;
		const pkg = packageOf(node.callFrame);
		selfPkg.set(pkg, (selfPkg.get(pkg) || 0) + us);
		const name = frameName(node.callFrame);
		selfFn.set(name, (selfFn.get(name) || 0) + us);
		// Inclusive: every package on the stack once.
		const seen = new Set<string>();
		const own = new Set<string>();
		for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
			const f = byId.get(id)!.callFrame;
			if (f.functionName === "(root)") break;
			const pkg = packageOf(f);
			seen.add(pkg);
			if (pkg.startsWith("app") && !pkg.startsWith("app:bench")) own.add(frameName(f));
		}
		for (const p of seen) if (!SCHEDULERS.has(p)) inclPkg.set(p, (inclPkg.get(p) || 0) + us);
		for (const f of own) inclOwn.set(f, (inclOwn.get(f) || 0) + us);
	}
	const busyMs = (totalUs - idleUs) / 1000;
	return {
		totalMs: totalUs / 1000,
		idleMs: idleUs / 1000,
		busyMs,
		gcMs: gcUs / 1000,
		topFunctions: rows(selfFn, busyMs, limit),
		selfByPackage: rows(selfPkg, busyMs, limit),
		inclusiveByPackage: rows(inclPkg, busyMs, limit),
		inclusiveOwnCode: rows(inclOwn, busyMs, limit),
	};
}

export function formatSummary(s: ProfileSummary, requests?: number): string {
	const out: string[] = [];
	const perReq = (ms: number) => (requests ? ` ${((ms * 1000) / requests).toFixed(0)} us/req` : "");
	// Samples are wall-clock: "busy" also holds time the thread waited for a core on a loaded machine.
	out.push(`  sampled ${s.totalMs.toFixed(0)} ms, not idle ${s.busyMs.toFixed(0)} ms (${((100 * s.busyMs) / Math.max(1, s.totalMs)).toFixed(0)}%)${perReq(s.busyMs)}, GC ${s.gcMs.toFixed(0)} ms (${((100 * s.gcMs) / Math.max(1, s.busyMs)).toFixed(1)}%)`);
	const table = (title: string, list: Row[]) => {
		out.push(`  ${title}:`);
		for (const r of list) out.push(`    ${r.pct.toFixed(1).padStart(5)}%  ${r.ms.toFixed(0).padStart(6)} ms${perReq(r.ms).padStart(13)}  ${r.name}`);
	};
	table("self time by package (% of not-idle samples)", s.selfByPackage);
	table("inclusive time by package (% of not-idle samples; a package counts once per stack)", s.inclusiveByPackage);
	table("our code (dist/), inclusive: synchronous work under each function, async continuations count where they resume", s.inclusiveOwnCode);
	table("top functions by self time", s.topFunctions);
	return out.join("\n");
}

/**
 * The samples taken between `fromUs` and `toUs` (the profile's clock: monotonic microseconds, what
 * the watcher benches log as "window starts at ... us"), so a `--cpu-prof` of a whole run can be
 * read for its measured window alone.
 */
export function cropProfile(profile: CpuProfile, fromUs: number, toUs: number): CpuProfile {
	const samples: number[] = [];
	const timeDeltas: number[] = [];
	let at = profile.startTime;
	let last = fromUs;
	for (let i = 0; i < profile.samples.length; i++) {
		at += profile.timeDeltas[i] || 0;
		if (at < fromUs || at > toUs) continue;
		samples.push(profile.samples[i]);
		timeDeltas.push(at - last);
		last = at;
	}
	return { ...profile, startTime: fromUs, endTime: Math.min(toUs, profile.endTime), samples, timeDeltas };
}

if (require.main === module) {
	const [file, units, from, to] = process.argv.slice(2);
	if (!file) {
		console.error("usage: node dist/bench/cpu-profile.js <file.cpuprofile> [requests [fromUs toUs]]");
		process.exit(2);
	}
	let profile = JSON.parse(fs.readFileSync(file, "utf8")) as CpuProfile;
	if (from && to) profile = cropProfile(profile, Number(from), Number(to));
	console.log(formatSummary(summarizeProfile(profile, 25), units ? Number(units) : undefined));
}
