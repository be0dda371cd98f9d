/**
 * The live registry owns each session's one state: every change is a named transition checked
 * against the table in session-state.ts, and opens go through its one door (joined while in
 * flight, waiting for an end or a write in flight). Runtimes here are stand-ins: the registry only
 * keeps and compares them.
 */
import { describe, expect, it } from "vitest";
import { LiveRegistry, type RuntimeOpener } from "../../src/sessions/core/live-registry.js";
import type { StateOrAbsent } from "../../src/sessions/core/session-state.js";
import type { SessionRuntime } from "../../src/sessions/core/session-runtime.js";

const runtimeFor = (id: string) => ({ id, viewers: new Map() }) as unknown as SessionRuntime;

/** An opener whose builds the test finishes by hand. */
class ManualOpener implements RuntimeOpener {
  readonly builds: Array<{ id: string; finish: () => SessionRuntime; fail: (err: Error) => void }> = [];
  constructor(private readonly registry: LiveRegistry) {}
  build(id: string): Promise<SessionRuntime> {
    return new Promise((resolve, reject) => {
      this.builds.push({
        id,
        finish: () => {
          const rt = runtimeFor(id);
          this.registry.opened(rt);
          resolve(rt);
          return rt;
        },
        fail: reject,
      });
    });
  }
}

function setup() {
  const refused: Array<[StateOrAbsent, StateOrAbsent]> = [];
  const warnings: Array<Record<string, unknown>> = [];
  const logger = { warn: (obj: Record<string, unknown>) => void warnings.push(obj) };
  const registry = new LiveRegistry({ logger: logger as never, refused: (from, to) => void refused.push([from, to]) });
  const opener = new ManualOpener(registry);
  registry.useOpener(opener);
  return { registry, opener, refused, warnings };
}

async function liveRuntime(registry: LiveRegistry, opener: ManualOpener, id = "s1"): Promise<SessionRuntime> {
  const opened = registry.open(id);
  const rt = opener.builds.at(-1)!.finish();
  await opened;
  return rt;
}

describe("session states", () => {
  it("a turn awaiting an open request: live | parked → awaiting → live (viewed) | parked, serving throughout", async () => {
    const { registry, opener, refused } = setup();
    const rt = await liveRuntime(registry, opener);
    expect(registry.awaiting(rt)).toBe(true);
    expect(registry.stateOf(rt)).toBe("awaiting");
    expect(registry.isServing(rt)).toBe(true);
    expect(registry.park(rt)).toBe(false); // its last viewer leaving does not park it: it stays awaiting
    expect(registry.stateOf(rt)).toBe("awaiting");
    expect(registry.answered(rt)).toBe(true); // nobody views it
    expect(registry.stateOf(rt)).toBe("parked");
    expect(registry.awaiting(rt)).toBe(true);
    rt.viewers.set("v", {} as never);
    expect(registry.answered(rt)).toBe(true);
    expect(registry.stateOf(rt)).toBe("live");
    expect(refused).toEqual([]);
  });

  it("refuses what the table does not allow — logged, counted, nothing changed", async () => {
    const { registry, opener, refused, warnings } = setup();
    // A runtime registered with no open of its id in flight.
    expect(registry.opened(runtimeFor("s9"))).toBe(false);
    expect(registry.has("s9")).toBe(false);
    expect(registry.stateOfId("s9")).toBe("absent");
    // A serving runtime is not dropped: it must end or be handed over first.
    const rt = await liveRuntime(registry, opener);
    expect(registry.drop(rt)).toBe(false);
    expect(registry.get("s1")).toBe(rt);
    expect(registry.stateOf(rt)).toBe("live");
    // An ending runtime neither awaits nor parks, nor is it handed over.
    registry.beginEnd(rt);
    expect(registry.awaiting(rt)).toBe(false);
    expect(registry.park(rt)).toBe(false);
    expect(registry.handOver(rt)).toBe(false);
    expect(registry.stateOf(rt)).toBe("ending");
    expect(refused).toEqual([
      ["absent", "live"],
      ["live", "absent"],
      ["ending", "awaiting"],
      ["ending", "parked"],
      ["ending", "handed-over"],
    ]);
    expect(warnings.map((w) => [w.session_id, w.cause])).toEqual([
      ["s9", "opened"],
      ["s1", "drop"],
      ["s1", "awaiting"],
      ["s1", "park"],
      ["s1", "hand-over"],
    ]);
    expect(registry.drop(rt)).toBe(true);
    expect(registry.stateOfId("s1")).toBe("absent");
    expect(refused).toHaveLength(5);
  });

  it("a discarded runtime (its row never stored) is ending, not handed over, then dropped", async () => {
    const { registry, opener, refused } = setup();
    const rt = await liveRuntime(registry, opener);
    expect(registry.discard(rt)).toBe(true);
    expect(registry.stateOf(rt)).toBe("ending");
    expect(registry.isServing(rt)).toBe(false);
    expect(registry.drop(rt)).toBe(true);
    expect(registry.has("s1")).toBe(false);
    expect(refused).toEqual([]);
  });
});

describe("LiveRegistry", () => {
  it("opens once: a second open joins the one in flight; the opened runtime is live and serving", async () => {
    const { registry, opener } = setup();
    const a = registry.open("s1");
    const b = registry.open("s1");
    expect(registry.stateOfId("s1")).toBe("opening");
    expect(opener.builds).toHaveLength(1);
    const rt = opener.builds[0]!.finish();
    expect(await a).toBe(rt);
    expect(await b).toBe(rt);
    expect(registry.stateOf(rt)).toBe("live");
    expect(registry.isServing(rt)).toBe(true);
    expect(await registry.open("s1")).toBe(rt);
    expect(opener.builds).toHaveLength(1);
  });

  it("a failed open leaves nothing behind", async () => {
    const { registry, opener } = setup();
    const open = registry.open("s1");
    opener.builds[0]!.fail(new Error("no lease"));
    await expect(open).rejects.toThrow("no lease");
    expect(registry.stateOfId("s1")).toBe("absent");
  });

  it("parks and unparks only along the table; an ending runtime is neither parked nor served", async () => {
    const { registry, opener } = setup();
    const opened = registry.open("s1");
    const rt = opener.builds[0]!.finish();
    await opened;
    expect(registry.unpark(rt)).toBe(false); // live already
    expect(registry.park(rt)).toBe(true);
    expect(registry.stateOf(rt)).toBe("parked");
    expect(registry.isServing(rt)).toBe(true);
    expect(registry.unpark(rt)).toBe(true);
    let finishEnd!: () => void;
    const ending = registry.beginEnd(rt, () => new Promise<void>((r) => (finishEnd = r)))!;
    expect(registry.stateOf(rt)).toBe("ending");
    expect(registry.isServing(rt)).toBe(false);
    expect(registry.park(rt)).toBe(false);
    expect(registry.handOver(rt)).toBe(false);
    registry.drop(rt);
    // The end's tail (the lease release) still runs: the session is still ending, and an open waits.
    expect(registry.stateOfId("s1")).toBe("ending");
    const reopened = registry.open("s1");
    await Promise.resolve();
    expect(opener.builds).toHaveLength(1);
    finishEnd();
    await ending;
    await new Promise((r) => setImmediate(r));
    expect(opener.builds).toHaveLength(2);
    const next = opener.builds[1]!.finish();
    expect(await reopened).toBe(next);
    expect(registry.stateOf(rt)).toBe("absent");
    expect(registry.stateOf(next)).toBe("live");
  });

  it("a handed-over runtime takes nothing new and goes when dropped", async () => {
    const { registry, opener } = setup();
    const opened = registry.open("s1");
    const rt = opener.builds[0]!.finish();
    await opened;
    expect(registry.handOver(rt, "s2")).toBe(true);
    expect(registry.stateOf(rt)).toBe("handed-over");
    expect(registry.isServing(rt)).toBe(false);
    expect(registry.isCurrent(rt)).toBe(true);
    registry.drop(rt);
    expect(registry.stateOfId("s1")).toBe("absent");
    expect(registry.has("s1")).toBe(false);
  });

  it("writes to a session not live here as `writing`: refused while anything else holds the id, and an open waits for it", async () => {
    const { registry, opener } = setup();
    let finishWrite!: () => void;
    const write = registry.borrow("s1", () => new Promise<void>((r) => (finishWrite = r)));
    expect(write).not.toBe(false);
    expect(registry.stateOfId("s1")).toBe("writing");
    expect(registry.borrow("s1", async () => undefined)).toBe(false);
    const open = registry.open("s1");
    await Promise.resolve();
    expect(opener.builds).toHaveLength(0);
    finishWrite();
    await write;
    await new Promise((r) => setImmediate(r));
    const rt = opener.builds[0]!.finish();
    expect(await open).toBe(rt);
    expect(registry.borrow("s1", async () => undefined)).toBe(false); // live here now
  });

  it("counts resumes in flight as a hold on the id, in any state", () => {
    const { registry } = setup();
    registry.bind("s1");
    registry.bind("s1");
    expect(registry.isBinding("s1")).toBe(true);
    expect(registry.unbind("s1")).toBe(1);
    expect(registry.unbind("s1")).toBe(0);
    expect(registry.isBinding("s1")).toBe(false);
  });
});
