/**
 * The command sandbox of the workspace terminal (and its background processes): bubblewrap
 * (`bwrap`, Debian's `bubblewrap`), run directly.
 *
 *   const launch = await launchFor({ mode: "bwrap", root, network: false, protect, envNames: [] }, cwd, command, process.env);
 *   spawn(launch.file, launch.args, { env: launch.env, … });
 *
 * What a command gets: its own PID namespace (it sees its own processes only: no `/proc/$PPID` of
 * the gateway), a fresh `/proc`, `/dev` and `/tmp`, the workspace root bind-mounted read-write,
 * the system's programs and `/etc` read-only, the folders on PATH read-only, an empty HOME, and
 * nothing else — the gateway's data and config folders are never mounted (masked, if they lie under
 * a read-only bind). No capabilities (a root gateway's commands cannot remount), no network unless
 * the profile says `network: true` (then the host's), and an environment built from an allowlist.
 * `--die-with-parent`: the sandbox dies with the gateway, even on SIGKILL; and it dies with its
 * shell, so whatever a command left behind (`setsid …`, `timeout …`) goes with it.
 *
 * Why bubblewrap directly and not a wrapper library (`@anthropic-ai/sandbox-runtime`): that
 * package needs Node >= 22.12 (Tether runs on 20), keeps one global sandbox config per process
 * (each profile and session here has its own root), and filters the network through proxies of
 * its own; the part Tether needs is one argv, built here and tested against the real binary.
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, readlinkSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, relative, sep } from "node:path";

export type SandboxMode = "bwrap" | "none";

/** How one command is sandboxed: what the profile says, with the session's root. */
export interface SandboxPolicy {
  mode: SandboxMode;
  /** The workspace root the command's cwd lies in (real): bound read-write. */
  root: string;
  /** Whether the command shares the host's network (else its own namespace, loopback only). */
  network: boolean;
  /** The gateway's own paths (real): never mounted; masked where they fall under a read-only bind. */
  protect: readonly string[];
  /** Environment variables passed through besides the base allowlist (`tools.workspace.env`). */
  envNames: readonly string[];
  /** The bubblewrap binary (`tools.bwrap`; default `bwrap` on PATH). */
  bwrap?: string;
}

/** The program to run for a command, and its environment. */
export interface CommandLaunch {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** `bwrap`: in the sandbox; `none`: a plain `/bin/sh -c` (the profile said `sandbox: none`). */
  mode: SandboxMode;
}

export type SandboxStatus = { available: true; version: string } | { available: false; reason: string };

/** What every command's environment may hold from the gateway's: nothing else passes. */
export const BASE_ENV = ["PATH", "HOME", "LANG", "TERM"] as const;

/** The system folders bound read-only (a symlink, as merged-/usr systems have, stays a symlink). */
const SYSTEM_BINDS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

/** Files under /etc a root gateway could read even without capabilities (they are root's own). */
const MASKED_FILES = ["/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"];

/** The command's environment: the allowlist, from the gateway's environment, nothing else. */
export function commandEnv(env: NodeJS.ProcessEnv, extra: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of [...BASE_ENV, ...extra]) {
    const v = env[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}

function inside(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

function kindOf(p: string): "dir" | "file" | "symlink" | null {
  try {
    const st = lstatSync(p);
    return st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "dir" : "file";
  } catch {
    return null;
  }
}

/** The folders on PATH not under a system bind: read-only too, so the commands the operator put there run. */
function pathBinds(path: string | undefined, covered: readonly string[], protect: readonly string[]): string[] {
  const out: string[] = [];
  for (const dir of (path ?? "").split(":")) {
    if (!isAbsolute(dir) || dir === "/" || out.includes(dir)) continue;
    if (covered.some((c) => inside(c, dir))) continue;
    // A folder that is, holds or lies in one of the gateway's own is never mounted.
    if (protect.some((p) => inside(dir, p) || inside(p, dir))) continue;
    if (kindOf(dir) === "dir") out.push(dir);
  }
  return out;
}

/**
 * bwrap's arguments for `command` run by `/bin/sh -c` in `cwd` (inside `policy.root`). Mounts
 * apply in order, a later one over an earlier: system, PATH, /proc, /dev, /tmp, HOME, the root,
 * then the masks.
 */
export function bwrapArgs(policy: SandboxPolicy, cwd: string, command: string, env: Record<string, string>): string[] {
  const args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"];
  if (!policy.network) args.push("--unshare-net");
  // Without this a gateway running as root hands its commands every capability (mount, mknod…).
  if (process.getuid?.() === 0) args.push("--cap-drop", "ALL");
  const bound: string[] = [];
  for (const dir of SYSTEM_BINDS) {
    const kind = kindOf(dir);
    if (kind === "symlink") args.push("--symlink", readlinkSync(dir), dir);
    else if (kind === "dir") {
      args.push("--ro-bind", dir, dir);
      bound.push(dir);
    }
  }
  for (const dir of pathBinds(env.PATH, [...bound, policy.root], policy.protect)) {
    args.push("--ro-bind", dir, dir);
    bound.push(dir);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  const home = env.HOME;
  // An empty, writable HOME of its own (the gateway's own holds its config): unless the workspace holds it.
  if (home && isAbsolute(home) && home !== "/" && !inside(policy.root, home)) args.push("--tmpfs", home);
  args.push("--bind", policy.root, policy.root);
  for (const f of MASKED_FILES) if (bound.some((b) => inside(b, f)) && kindOf(f) === "file") args.push("--ro-bind", "/dev/null", f);
  for (const p of policy.protect) {
    if (!bound.some((b) => inside(b, p)) || bound.includes(p)) continue;
    const kind = kindOf(p);
    if (kind === "dir") args.push("--tmpfs", p);
    else if (kind === "file") args.push("--ro-bind", "/dev/null", p);
  }
  args.push("--chdir", cwd, "--", "/bin/sh", "-c", command);
  return args;
}

/** The bwrap argv of the availability probe: the real shape, `true` as the command. */
function probeArgs(): string[] {
  const root = tmpdir();
  return bwrapArgs({ mode: "bwrap", root, network: false, protect: [], envNames: [] }, root, "true", commandEnv(process.env, []));
}

const probed = new Map<string, Promise<SandboxStatus>>();

/**
 * Whether bwrap runs here, found once per process and binary (`bwrap … true`) and cached: a
 * missing binary, or a kernel or container that refuses its namespaces, says why.
 */
export function sandboxStatus(bwrap = "bwrap"): Promise<SandboxStatus> {
  let status = probed.get(bwrap);
  if (!status) probed.set(bwrap, (status = probe(bwrap)));
  return status;
}

function probe(bwrap: string): Promise<SandboxStatus> {
  return new Promise<SandboxStatus>((resolveStatus) => {
    const child = spawn(bwrap, probeArgs(), { stdio: ["ignore", "ignore", "pipe"], env: commandEnv(process.env, []) });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", (err: NodeJS.ErrnoException) =>
      resolveStatus({ available: false, reason: err.code === "ENOENT" ? `${bwrap} is not installed (Debian: apt-get install bubblewrap)` : `${bwrap} could not start: ${err.message}` }),
    );
    child.once("close", (code) => {
      if (code !== 0) {
        resolveStatus({ available: false, reason: `${bwrap} failed here (exit ${code}): ${stderr.trim().split("\n")[0] ?? ""}`.trim() });
        return;
      }
      const version = spawn(bwrap, ["--version"], { stdio: ["ignore", "pipe", "ignore"], env: commandEnv(process.env, []) });
      let out = "";
      version.stdout.on("data", (d: Buffer) => (out += d.toString()));
      version.once("error", () => resolveStatus({ available: true, version: "bwrap" }));
      version.once("close", () => resolveStatus({ available: true, version: out.trim() || "bwrap" }));
    });
  });
}

/** The sandbox is off by the operator's word, or unusable here: why a command does not start. */
export class SandboxUnavailable extends Error {
  override name = "SandboxUnavailable";
}

/** How to run `command` in `cwd` under `policy`: the sandbox, or (only when the profile said so) none. */
export async function launchFor(policy: SandboxPolicy, cwd: string, command: string, gatewayEnv: NodeJS.ProcessEnv): Promise<CommandLaunch> {
  const env = commandEnv(gatewayEnv, policy.envNames);
  if (policy.mode === "none") return { file: "/bin/sh", args: ["-c", command], env, mode: "none" };
  const bwrap = policy.bwrap ?? "bwrap";
  const status = await sandboxStatus(bwrap);
  if (!status.available) {
    throw new SandboxUnavailable(
      `the command sandbox is not available: ${status.reason}. Commands do not run without it unless the profile sets tools.workspace.sandbox: none`,
    );
  }
  if (!existsSync(cwd) || !statSync(cwd).isDirectory()) throw new SandboxUnavailable(`cwd is not a folder: ${cwd}`);
  return { file: bwrap, args: ["--json-status-fd", "3", ...bwrapArgs(policy, cwd, command, env)], env, mode: "bwrap" };
}
