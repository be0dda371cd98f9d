/**
 * Runs `tether serve` as a real child process (the same command users run), for tests that kill,
 * restart or signal it. Resolves once it printed its `tether listening on …` line.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function tempConfigPath(): string {
  return join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
}

const BIN = fileURLToPath(new URL("../../bin/tether.js", import.meta.url));

export interface SpawnedGateway {
  child: ChildProcess;
  url: string;
  wsUrl: string;
  stdoutLines: string[];
  stderr: () => string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `bin`: another build's `bin/tether.js` (a mixed-version test, a before/after bench), else this one's. */
export async function spawnGateway(args: string[], env: Record<string, string> = {}, bin = BIN): Promise<SpawnedGateway> {
  const child = spawn(process.execPath, [bin, "serve", ...args], {
    // A config file of its own: a developer's ~/.tether/config.yaml never leaks into a test.
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: tempConfigPath(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdoutLines: string[] = [];
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let buf = "";
    child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        stdoutLines.push(line);
        const m = /^tether listening on (http:\/\/\S+)$/.exec(line);
        if (m) resolve(m[1]!);
      }
    });
    void exited.then((code) => reject(new Error(`tether serve exited (${code}) before listening:\n${stderr}`)));
  });
  return {
    child,
    url,
    wsUrl: `${url.replace(/^http/, "ws")}/ws`,
    stdoutLines,
    stderr: () => stderr,
    exited,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs `tether serve` expecting it to fail at start; resolves with its exit code and stderr. */
export function spawnGatewayExpectingFailure(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, "serve", ...args], {
    // A config file of its own: a developer's ~/.tether/config.yaml never leaks into a test.
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: tempConfigPath(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}
