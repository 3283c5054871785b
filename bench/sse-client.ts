/** Server-sent events read from a text stream (what EventSource does with the bytes): the pay-live bench and the tests' stream reader. */
export function sseParser(onEvent: (event: string, data: string) => void): (chunk: string) => void {
	let buf = "";
	return chunk => {
		buf += chunk;
		let i: number;
		while ((i = buf.indexOf("\n\n")) >= 0) {
			const block = buf.slice(0, i);
			buf = buf.slice(i + 2);
			let event = "message";
			const data: string[] = [];
			for (const line of block.split("\n")) {
				if (line.startsWith("event: ")) event = line.slice(7);
				else if (line.startsWith("data: ")) data.push(line.slice(6));
			}
			// Comments (the heartbeat) and the retry field carry no data: no event.
			if (data.length) onEvent(event, data.join("\n"));
		}
	};
}
