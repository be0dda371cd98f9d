/**
 * The layer rules of docs/architecture.md, checked rather than hoped for: imports point down,
 * protocol/ is a leaf, client/ sees only protocol/, react/ only client/ and protocol/, the gateway never touches the store — and
 * inside sessions/, each sub-room imports only the sub-rooms ranked below it.
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
  // The React binding (packages/react): the SDK and its vocabulary, nothing of the gateway.
  react: ["protocol", "client"],
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

/**
 * The sub-rooms of sessions/ by rank: a sub-room may import its own files and those of LOWER ranks
 * only — never a sibling of its rank, never one above. `top` is the files directly in sessions/.
 * `requests` (open requests) and `messaging` (bots, rooms, the agent outbox) have no files yet:
 * they are ranked already, so the first file added there is checked.
 */
const SESSION_ROOMS: Record<string, number> = {
  core: 0,
  lifecycle: 1,
  models: 2,
  views: 2,
  requests: 2,
  processes: 2,
  branching: 2,
  delivery: 2,
  rotation: 3,
  delegation: 3,
  cluster: 3,
  messaging: 3,
  runs: 3,
  commands: 4,
  top: 5,
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

/** The sub-room of a file in sessions/: its folder, or `top` for a file directly in sessions/. */
function sessionRoomOf(path: string): string {
  const parts = relative(join(SRC, "sessions"), path).split("/");
  return parts.length > 1 ? parts[0]! : "top";
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.[^"']+)["']/g)].map((m) => m[1]!);
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
      for (const spec of importsOf(file)) {
        checked++;
        const target = layerOf(join(file, "..", spec));
        if (target !== from && !allowed.includes(target)) {
          violations.push(`${relative(SRC, file)} imports ${spec} (${from} → ${target})`);
        }
      }
    }
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  it("inside sessions/, every import points to a sub-room ranked below (or the file's own)", () => {
    const violations: string[] = [];
    let checked = 0;
    for (const file of files(join(SRC, "sessions"))) {
      const from = sessionRoomOf(file);
      const rank = SESSION_ROOMS[from];
      if (rank === undefined) {
        violations.push(`${relative(SRC, file)}: sub-room "${from}" of sessions/ has no rank in SESSION_ROOMS`);
        continue;
      }
      for (const spec of importsOf(file)) {
        const target = join(file, "..", spec);
        if (layerOf(target) !== "sessions") continue;
        checked++;
        const to = sessionRoomOf(target);
        if (to !== from && !((SESSION_ROOMS[to] ?? Infinity) < rank)) {
          violations.push(`${relative(SRC, file)} imports ${spec} (sessions/${from} → sessions/${to})`);
        }
      }
    }
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });

  it("no room reaches into another's internals: a runtime's state is changed by core only, the rooms behind a manager are reached by top only", () => {
    // A runtime's row and call options change through its methods (which emit the frame that
    // tells viewers); SessionManager.parts is the assembly's, for the files directly in sessions/.
    const RT = "(?:rt|runtime|live|parent|child|tip)";
    const WRITES_RUNTIME = new RegExp(`\\b${RT}\\.row(?:\\.\\w+)*\\s*=(?!=)|Object\\.assign\\(\\s*${RT}\\.row\\b|\\.callOptions\\s*=(?!=)`);
    // The rooms behind a manager are reached by name (sessionRooms), never by a field.
    const MANAGER_PARTS = /\bsessionRooms\(|\b(?:sessions|manager)\.parts\b/;
    const violations: string[] = [];
    let checked = 0;
    for (const file of files(SRC)) {
      const inSessions = layerOf(file) === "sessions";
      const room = inSessions ? sessionRoomOf(file) : layerOf(file);
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          checked++;
          const code = line.replace(/\/\/.*$/, "");
          if (room !== "core" && WRITES_RUNTIME.test(code)) violations.push(`${relative(SRC, file)}:${i + 1}: writes a runtime's state`);
          if (!(inSessions && room === "top") && MANAGER_PARTS.test(code)) violations.push(`${relative(SRC, file)}:${i + 1}: reaches the rooms behind a SessionManager`);
        });
    }
    expect(violations).toEqual([]);
    expect(checked).toBeGreaterThan(1000);
  });

  it("every turn enters through the turn entry: no file under sessions/ but the prompt's handler submits to a runtime", () => {
    // Delegation, messaging, A2A and rooms start their turns through delivery/turn-door.ts (the
    // manager's startTurn → the resolved prompt.submit command), so admission, titles, routing and
    // activity hold for them too.
    const SUBMITS = /\b(?:rt|runtime|live|child|tip|parent|session)\.submit\(/;
    const allowed = new Set(["sessions/commands/handlers.ts", "sessions/core/session-runtime.ts"]);
    const violations: string[] = [];
    for (const file of files(join(SRC, "sessions"))) {
      const rel = relative(SRC, file);
      if (allowed.has(rel)) continue;
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          if (SUBMITS.test(line.replace(/\/\/.*$/, ""))) violations.push(`${rel}:${i + 1}: submits to a runtime past the turn entry`);
        });
    }
    expect(violations).toEqual([]);
  });

  it("every session is created by the one creation path: no file but sessions/creating.ts builds, inserts or opens a new session", () => {
    // Transports, messaging (createKnown) and a delegation's task (createChild) all create through
    // sessions/creating.ts, handed down to the rooms below as the TurnDoor: one row shape, the
    // session quotas, the lease in the row's transaction, the first session.info. The one exception
    // is named: a rotation's continuation is written in the rotation's one transaction, with the
    // parent's end and the copied transcript (rotation/continuation.ts), and opened through the registry.
    const CREATES = /["']session\.insert["']|\bregistry\.openFresh\(|\b(?:newSessionRow|delegateChildRow)\(/;
    const allowed = new Set(["sessions/creating.ts", "sessions/rotation/continuation.ts"]);
    const violations: string[] = [];
    for (const file of files(SRC)) {
      const rel = relative(SRC, file);
      // store/ defines and applies the op; everything above it may only ask creating.ts.
      if (allowed.has(rel) || layerOf(file) === "store") continue;
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, i) => {
          // Code only: not a comment, not where a row builder is defined.
          const code = line.replace(/\/\/.*$/, "").replace(/^\s*(?:\/\*\*|\*).*$/, "").replace(/^export function \w+\(/, "");
          if (!CREATES.test(code)) return;
          violations.push(`${rel}:${i + 1}: creates a session past sessions/creating.ts`);
        });
    }
    expect(violations).toEqual([]);
  });

  it("the MCP SDK is used in agent/tools/mcp/ only: one place speaks MCP", () => {
    const outside: string[] = [];
    for (const file of files(SRC)) {
      const rel = relative(SRC, file);
      if (rel.startsWith("agent/tools/mcp/")) continue;
      if (/from\s+["']@modelcontextprotocol\/sdk/.test(readFileSync(file, "utf8"))) outside.push(rel);
    }
    expect(outside).toEqual([]);
    expect(files(join(SRC, "agent/tools/mcp")).some((f) => /from\s+["']@modelcontextprotocol\/sdk/.test(readFileSync(f, "utf8")))).toBe(true);
  });
});
