/**
 * `tether serve` holds V8's young generation at its first size until it listens
 * (src/lib/young-generation.ts): the start's burst of surviving allocations would otherwise leave
 * ~7 MiB of new space committed in an idle gateway. Run in a fresh node process each, since V8's
 * flags are the process's and a test worker's new space has grown already.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const MODULE = fileURLToPath(new URL("../../src/lib/young-generation.ts", import.meta.url));

/** New space's size (bytes) at start, after a burst while held, and after another once released. */
function probe(nodeArgs: string[] = []): { initial: number; held: number; released: number } {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    import { holdYoungGeneration, releaseYoungGeneration } from ${JSON.stringify(MODULE)};
    const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
    // Like a start: objects that survive several scavenges, in one burst.
    const burst = () => { let keep = []; for (let i = 0; i < 300000; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 80000) keep = keep.slice(40000); } return keep.length; };
    const initial = newSpace();
    holdYoungGeneration();
    burst();
    const held = newSpace();
    releaseYoungGeneration();
    burst();
    console.log(JSON.stringify({ initial, held, released: newSpace() }));
  `;
  const r = spawnSync(process.execPath, [...nodeArgs, "--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`probe failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as { initial: number; held: number; released: number };
}

describe("the young generation during a start", () => {
  it("does not grow while held, and grows with the load again once released", () => {
    const { initial, held, released } = probe();
    expect(held).toBe(initial);
    expect(released).toBeGreaterThan(held);
  });

  it("is left to an operator who sized it (node's --max-semi-space-size)", () => {
    const { initial, held } = probe(["--max-semi-space-size=8"]);
    expect(held).toBeGreaterThan(initial);
  });
});
