/**
 * A run's event stream across a crash: `tether serve` runs two runs, the client's SSE streams are
 * cut, the process is SIGKILLed (one run mid-turn, one finished while nobody read it), started
 * again on the same store and port, and each stream is resumed with `Last-Event-ID`: every durable
 * event after the cursor arrives once, none before it, and each stream ends with its run's
 * terminal event — `run.failed { status: "interrupted" }` for the run the crash cut, with the text
 * the store kept; `run.completed` with the whole output for the other. `GET /v1/runs/{id}` says
 * the same after the restart.
 */
import { afterAll, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { openSse, type SseConnection, type SseEvent } from "../support/sse-client.js";
import { tempDbPath } from "../support/temp-db.js";
import { countText, waitUntil } from "./fault-support.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

async function startRun(url: string, input: string): Promise<{ run_id: string; session_id: string }> {
  const res = await fetch(`${url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ input }) });
  expect(res.status).toBe(202);
  return res.json();
}

const deltas = (evs: SseEvent[]) => evs.filter((e) => e.event === "message.delta");
const textOf = (evs: SseEvent[]) => deltas(evs).map((e) => JSON.parse(e.data).text).join("");

describe("runs across a crash", () => {
  it("SSE cut, SIGKILL, restart: Last-Event-ID resumes each run's stream, nothing lost, nothing twice", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: "5" };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    const long = await startRun(first.url, "count to 5000");
    const short = await startRun(first.url, "count to 400");
    const streams: Record<string, SseConnection> = {};
    for (const run of [long, short]) streams[run.run_id] = await openSse(`${first.url}/v1/runs/${run.run_id}/events`);
    await waitUntil(() => deltas(streams[short.run_id]!.events).length >= 50 && deltas(streams[long.run_id]!.events).length >= 50, 20_000, "deltas on both streams");
    for (const s of Object.values(streams)) s.close();
    // Cut mid-run: neither stream has its terminal event yet.
    for (const s of Object.values(streams)) expect(s.events.some((e) => e.event?.startsWith("run.") && e.event !== "run.started")).toBe(false);
    const before = Object.fromEntries(Object.entries(streams).map(([id, s]) => [id, [...s.events]]));
    // The short run finishes while nobody reads its stream; the long one is mid-turn at the kill.
    const shortDone = await openSse(`${first.url}/api/sessions/${short.session_id}/events?after_seq=0`);
    await shortDone.waitFor((evs) => evs.some((e) => e.event === "turn.complete"), 20_000);
    shortDone.close();
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);
    for (const run of [long, short]) {
      const seen = before[run.run_id]!;
      const last = seen.at(-1)!.id!;
      const rest = await openSse(`${second.url}/v1/runs/${run.run_id}/events`, { headers: { "last-event-id": last } });
      await rest.ended;
      const all = [...seen, ...rest.events];
      const ids = all.map((e) => Number(e.id));
      // Nothing twice, nothing out of order: every id after the cursor is new.
      expect(rest.events.every((e) => Number(e.id) > Number(last))).toBe(true);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(all.filter((e) => e.event === "run.started")).toHaveLength(1);
      const end = JSON.parse(rest.events.at(-1)!.data);
      const status = await (await fetch(`${second.url}/v1/runs/${run.run_id}`)).json();
      if (run === short) {
        expect(rest.events.at(-1)!.event).toBe("run.completed");
        expect(end.output).toBe(countText(400));
        expect(status).toMatchObject({ status: "completed", output: countText(400) });
      } else {
        expect(rest.events.at(-1)!.event).toBe("run.failed");
        expect(end).toMatchObject({ status: "interrupted", error: { code: "interrupted" } });
        // The kept text is a prefix of the reply; what the client saw and what was kept agree.
        const kept: string = end.output;
        const shown = textOf(all);
        expect(kept.length).toBeGreaterThan(0);
        expect(countText(5000).startsWith(kept)).toBe(true);
        expect(kept.startsWith(shown) || shown.startsWith(kept)).toBe(true);
        expect(status).toMatchObject({ status: "interrupted", output: kept });
      }
    }
  });
});
