/**
 * The two helper processes of the concurrency benchmark (bench/concurrency.ts), each its own
 * process so neither shares an event loop with the gateway or with the other:
 *
 *   run-ts.js bench/concurrency-procs.ts upstream PACE_MS DELTAS
 *     An OpenAI-compatible model: every streaming chat completion sends DELTAS chunks, each one
 *     PACE_MS × (0.5…1.5) after the one before (its own timer: streams do not share a tick), and
 *     each chunk's text is `t<send time> ` (ms since the epoch, sub-ms), so a client can tell how
 *     long that exact chunk took to reach it. Prints `listening URL`.
 *   run-ts.js bench/concurrency-procs.ts client WS_URL SESSIONS STAGGER_MS
 *     The load client: SESSIONS WebSockets, a session each; prints `ready`, and on `go` (stdin)
 *     submits each session's turn at a random moment within STAGGER_MS; once every turn is
 *     complete prints one JSON line: the latencies (ms, chunk sent upstream → delta received here)
 *     and the first submit / last completion times.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import WebSocket from "ws";

/** Wall-clock ms with sub-ms precision, comparable across processes of one machine. */
const nowMs = (): number => performance.timeOrigin + performance.now();

function upstream(paceMs: number, deltas: number): void {
  const chunk = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.write(chunk({ role: "assistant", content: "" }));
      let sent = 0;
      const next = () => {
        if (res.destroyed) return;
        if (sent === deltas) {
          res.end(`${chunk({}, "stop")}data: [DONE]\n\n`);
          return;
        }
        sent++;
        res.write(chunk({ content: `t${nowMs().toFixed(2)} ` }));
        setTimeout(next, paceMs * (0.5 + Math.random()));
      };
      setTimeout(next, paceMs * Math.random());
    });
  });
  srv.keepAliveTimeout = 60_000;
  srv.listen(0, "127.0.0.1", () => console.log(`listening http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`));
}

class Session {
  id = "";
  private nextId = 1;
  private readonly answers = new Map<number, (r: any) => void>();
  done: Promise<void>;
  private finish!: () => void;

  constructor(private readonly ws: WebSocket, latencies: number[]) {
    this.done = new Promise((r) => (this.finish = r));
    ws.on("message", (data: Buffer) => {
      const at = nowMs();
      const text = data.toString();
      if (text.includes('"message.delta"')) {
        // One delta may carry several chunks (they arrived together): each is measured.
        for (const m of text.matchAll(/t(\d+\.\d+) /g)) latencies.push(at - Number(m[1]));
        return;
      }
      const msg = JSON.parse(text) as { id?: number; result?: any; error?: { message: string }; method?: string; params?: { type: string } };
      if (msg.method === "event") {
        if (msg.params!.type === "turn.complete") this.finish();
        return;
      }
      const answer = this.answers.get(msg.id!);
      this.answers.delete(msg.id!);
      if (msg.error) throw new Error(msg.error.message);
      answer?.(msg.result);
    });
  }

  call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.answers.set(id, resolve);
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}

async function client(wsUrl: string, n: number, staggerMs: number): Promise<void> {
  const latencies: number[] = [];
  const sessions: Session[] = [];
  for (let i = 0; i < n; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, n - i) }, () => new Promise<Session>((resolve, reject) => {
        const ws = new WebSocket(wsUrl);
        ws.once("open", () => resolve(new Session(ws, latencies)));
        ws.once("error", reject);
      })),
    );
    await Promise.all(batch.map(async (s) => (s.id = (await s.call("session.create", {})).session_id)));
    sessions.push(...batch);
  }
  console.log("ready");
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once("line", () => resolve()));
  const start = nowMs();
  for (const s of sessions) setTimeout(() => void s.call("prompt.submit", { session_id: s.id, text: "count" }), Math.random() * staggerMs);
  await Promise.all(sessions.map((s) => s.done));
  const end = nowMs();
  // Several MB to a pipe: exit once written (process.exit would cut an asynchronous write short).
  process.stdout.write(`${JSON.stringify({ start, end, latencies: latencies.map((l) => Math.round(l * 100) / 100) })}\n`, () => process.exit(0));
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "upstream") upstream(Number(rest[0]), Number(rest[1]));
else if (mode === "client") void client(rest[0]!, Number(rest[1]), Number(rest[2]));
else {
  console.error("usage: concurrency-procs.ts upstream PACE_MS DELTAS | client WS_URL SESSIONS STAGGER_MS");
  process.exit(2);
}
