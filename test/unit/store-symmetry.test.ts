/**
 * The two store backends are symmetric, file for file, and neither reaches into the other: what
 * they share (rows, write ops, errors, column mappers) lives beside them in store/. Checked here
 * so the next backend change keeps it so.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const STORE = new URL("../../src/store/", import.meta.url).pathname;
const BACKENDS = ["sqlite", "postgres"] as const;

/**
 * Files one backend has for a reason the other lacks, each with that reason. Anything else found in
 * one backend only fails the test.
 */
const ONLY_IN: Record<string, Record<string, string>> = {
  postgres: { "op-runs.ts": "a group commit's row writes gathered into one statement per kind: round trips SQLite does not make" },
  sqlite: {},
};

/** A backend's files, its own store file named generically, less its named backend-only files. */
function filesOf(backend: string): string[] {
  return readdirSync(join(STORE, backend))
    .filter((f) => f.endsWith(".ts") && !(f in ONLY_IN[backend]!))
    .map((f) => (f === `${backend}-store.ts` ? "<backend>-store.ts" : f))
    .sort();
}

describe("store backends", () => {
  it("have the same set of files", () => {
    expect(filesOf("postgres")).toEqual(filesOf("sqlite"));
  });

  it("the backend-only files named above exist (an exemption does not outlive its file)", () => {
    for (const backend of BACKENDS) {
      const present = new Set(readdirSync(join(STORE, backend)));
      expect(Object.keys(ONLY_IN[backend]!).filter((f) => !present.has(f))).toEqual([]);
    }
  });

  it("never import each other: shared code sits beside them", () => {
    const crossing: string[] = [];
    for (const backend of BACKENDS) {
      const other = BACKENDS.find((b) => b !== backend)!;
      for (const f of readdirSync(join(STORE, backend)).filter((n) => n.endsWith(".ts"))) {
        const text = readFileSync(join(STORE, backend, f), "utf8");
        if (new RegExp(`from\\s+["']\\.\\./${other}/`).test(text)) crossing.push(`${backend}/${f} imports ${other}/`);
      }
    }
    expect(crossing).toEqual([]);
  });
});
