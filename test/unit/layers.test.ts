/**
 * The layer rules of docs/architecture.md, checked rather than hoped for: imports point down,
 * protocol/ is a leaf, client/ sees only protocol/, the gateway never touches the store.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = new URL("../../src/", import.meta.url).pathname;

/** Each layer, and the layers it may import (besides itself). */
const ALLOWED: Record<string, string[]> = {
  protocol: [],
  lib: [],
  client: ["protocol"],
  config: ["protocol", "lib"],
  store: ["protocol", "lib"],
  events: ["protocol", "lib", "store"],
  agent: ["protocol", "lib", "store", "events", "config"],
  sessions: ["protocol", "lib", "store", "events", "agent", "config"],
  gateway: ["protocol", "lib", "sessions", "config"],
  cli: ["protocol", "lib", "config", "store", "events", "agent", "sessions", "gateway", "client"],
  // The package's `tether` entry point (embedding): the composition root, as a library.
  embed: ["protocol", "lib", "config", "store", "events", "agent", "sessions", "gateway", "client", "cli"],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
}

function layerOf(path: string): string {
  return relative(SRC, path).split("/")[0]!;
}

describe("layer rules", () => {
  it("every import in src/ points to an allowed layer", () => {
    const violations: string[] = [];
    let checked = 0;
    for (const file of files(SRC)) {
      const from = layerOf(file);
      const allowed = ALLOWED[from];
      if (!allowed) {
        violations.push(`${relative(SRC, file)}: layer "${from}" is not in the table`);
        continue;
      }
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)) {
        checked++;
        const target = layerOf(join(file, "..", m[1]!));
        if (target !== from && !allowed.includes(target)) {
          violations.push(`${relative(SRC, file)} imports ${m[1]} (${from} → ${target})`);
        }
      }
    }
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });
});
