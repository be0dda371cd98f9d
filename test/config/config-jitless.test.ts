/**
 * The config is parsed without zod's compiled fast path: a config is parsed once per start (and per
 * reload), and generating + compiling that code for the whole config schema cost ~20 ms of the
 * start (`npm run bench -- --only=startup`) for one parse. The checks and the result are the same
 * (the rest of test/config/ covers them); this file only checks that no code is generated.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, resolveConfig, type ConfigInput } from "../../src/config/index.js";

const dir = mkdtempSync(join(tmpdir(), "tether-jitless-"));
const RealFunction = globalThis.Function;

/** Counts `new Function(…)` (how zod compiles its fast paths) until the test ends. */
function countCompiledFunctions(): { count: number } {
  const seen = { count: 0 };
  globalThis.Function = new Proxy(RealFunction, {
    construct(target, args) {
      seen.count++;
      return Reflect.construct(target, args);
    },
  });
  return seen;
}

afterEach(() => {
  globalThis.Function = RealFunction;
});

const input = {
  dbPath: join(dir, "tether.db"),
  home: join(dir, "home"),
  profiles: { dev: { model: { provider: "demo" } } },
  retention: { ended_after_days: 30 },
} as unknown as ConfigInput;

describe("parsing the config", () => {
  it("generates no code (zod's fast path is skipped for the one parse a start does)", () => {
    const compiled = countCompiledFunctions();
    const config = resolveConfig({}, input);
    expect(config.profiles.dev).toBeDefined();
    expect(compiled.count).toBe(0);
  });

  it("still refuses a bad value with the same error", () => {
    const compiled = countCompiledFunctions();
    expect(() => resolveConfig({}, { ...input, retention: { ended_after_days: "soon" } } as unknown as ConfigInput)).toThrow(ConfigError);
    expect(compiled.count).toBe(0);
  });
});
