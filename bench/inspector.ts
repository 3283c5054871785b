/**
 * Minimal Chrome DevTools Protocol client for a child started with `--inspect=127.0.0.1:0`: the
 * bench starts and stops V8's sampling profiler around one case, so start-up and the other cases
 * stay out of the profile (`--cpu-prof` would record the whole life of the process).
 */
import type { CpuProfile } from "./cpu-profile";

export class InspectorClient {
	private nextId = 1;
	private pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();

	private constructor(private ws: WebSocket) {
		ws.addEventListener("message", ev => {
			const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
			if (msg.id === undefined) return;
			const p = this.pending.get(msg.id);
			if (!p) return;
			this.pending.delete(msg.id);
			if (msg.error) p.reject(new Error(msg.error.message));
			else p.resolve(msg.result);
		});
	}

	/** `url`: the `ws://127.0.0.1:<port>/<uuid>` the child prints as "Debugger listening on ...". */
	static connect(url: string): Promise<InspectorClient> {
		if (!/^ws:\/\/127\.0\.0\.1:\d+\//.test(url)) return Promise.reject(new Error(`refusing inspector URL ${url}`));
		return new Promise((resolve, reject) => {
			const ws = new WebSocket(url);
			ws.addEventListener("open", () => resolve(new InspectorClient(ws)));
			ws.addEventListener("error", () => reject(new Error(`cannot connect to the inspector at ${url}`)));
		});
	}

	send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
		const id = this.nextId++;
		return new Promise<T>((resolve, reject) => {
			this.pending.set(id, { resolve, reject });
			this.ws.send(JSON.stringify({ id, method, params }));
		});
	}

	async startProfile(intervalUs = 1000): Promise<void> {
		await this.send("Profiler.enable");
		await this.send("Profiler.setSamplingInterval", { interval: intervalUs });
		await this.send("Profiler.start");
	}

	async stopProfile(): Promise<CpuProfile> {
		const { profile } = await this.send<{ profile: CpuProfile }>("Profiler.stop");
		await this.send("Profiler.disable");
		return profile;
	}

	close(): void {
		this.ws.close();
	}
}
