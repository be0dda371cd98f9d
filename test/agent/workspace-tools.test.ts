/**
 * The workspace tools on real files and real commands in a temporary folder: confinement (`..`,
 * absolute paths, a symlink out), the terminal's exit code, duration, output cap and timeout (on a
 * FakeClock), the file tools, and their policies through the tool runtime.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDefaultTools, createTodoList, ToolOutput, ToolRuntime, type Tool, type ToolContext } from "../../src/agent/tools/index.js";
import { executeTool } from "../../src/agent/tools/index.js";
import { createWorkspaceTools, WorkspaceSource } from "../../src/agent/tools/workspace/index.js";
import { FakeClock, systemClock, type Clock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { toolsConfigFor, resolveConfig, type WorkspaceSettings } from "../../src/config/index.js";
import { RecordingEventLog } from "../support/recording-event-log.js";
import { sandboxStatus } from "../../src/agent/tools/workspace/index.js";
import { killSurvivors, survivors, uniqueMarker } from "../support/proc-scan.js";
import { createServer, type AddressInfo } from "node:net";

const sandbox = await sandboxStatus();
if (!sandbox.available) console.warn(`SKIPPED the command sandbox tests: ${sandbox.reason}`);

const root = mkdtempSync(join(tmpdir(), "tether-ws-"));
const work = join(root, "work");
const outside = join(root, "outside");

beforeAll(() => {
  mkdirSync(join(work, "src"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(work, "src", "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(outside, "secret.txt"), "top secret\n");
  symlinkSync(outside, join(work, "out-link"));
  symlinkSync(join(outside, "secret.txt"), join(work, "secret-link.txt"));
  symlinkSync(join(outside, "nothing-yet.txt"), join(work, "dangling.txt"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const settings = (roots: string[], over: Partial<WorkspaceSettings> = {}): WorkspaceSettings => ({ roots, sandbox: "bwrap", network: false, env: [], max_processes: 8, bwrap: "bwrap", ...over });

/** The workspace tools of a profile whose roots are `roots` (default: the work folder). */
function tools(clock: Clock = systemClock, roots: string[] = [work], over: Partial<WorkspaceSettings> = {}, protect: string[] = []): Map<string, Tool> {
  return new Map(createWorkspaceTools({ clock, roots: () => ({ roots, protect }), settings: () => settings(roots, over) }).map((t) => [t.spec.name, t]));
}

function ctx(cwd: string | null = work, signal = new AbortController().signal): ToolContext {
  const log = new RecordingEventLog();
  return { sessionId: log.sessionId, turnId: "turn_1", traceId: "t".repeat(32), log, todo: createTodoList({ revision: 0, items: [] }), signal, ...(cwd ? { cwd } : {}) };
}

async function run(name: string, args: unknown, opts: { clock?: Clock; cwd?: string; roots?: string[]; settings?: Partial<WorkspaceSettings>; protect?: string[] } = {}) {
  const tool = tools(opts.clock, opts.roots, opts.settings, opts.protect).get(name)!;
  return executeTool(tool, args, ctx(opts.cwd ?? work), { timeoutMs: 60_000, clock: opts.clock ?? systemClock, logger: silentLogger() });
}

describe("path confinement", () => {
  it.each([
    ["..", { path: "../outside/secret.txt" }],
    ["an absolute path outside", { path: join(outside, "secret.txt") }],
    ["a symlinked folder pointing out", { path: "out-link/secret.txt" }],
    ["a symlinked file pointing out", { path: "secret-link.txt" }],
  ])("read_file refuses %s", async (_what, args) => {
    const r = await run("read_file", args);
    expect(r.error).toMatchObject({ layer: "tool", code: "outside_workspace" });
    expect(r.content).not.toContain("top secret");
  });

  it("write_file refuses escapes, including through a dangling symlink, and writes nothing", async () => {
    for (const path of ["../outside/new.txt", join(outside, "new.txt"), "out-link/new.txt", "dangling.txt"]) {
      const r = await run("write_file", { path, content: "x" });
      expect(r.error?.code, path).toBe("outside_workspace");
    }
    expect(existsSync(join(outside, "new.txt"))).toBe(false);
    expect(existsSync(join(outside, "nothing-yet.txt"))).toBe(false);
  });

  it("the terminal's cwd is confined too; an absolute path inside is fine", async () => {
    expect((await run("terminal", { command: "pwd", cwd: "../outside" })).error?.code).toBe("outside_workspace");
    expect((await run("terminal", { command: "pwd", cwd: "out-link" })).error?.code).toBe("outside_workspace");
    const inside = await run("terminal", { command: "pwd", cwd: join(work, "src") });
    expect(inside.error).toBeUndefined();
    expect((inside.result as { output: string }).output.trim()).toBe(join(work, "src"));
  });

  it("the workspace is the root the cwd lies in: a cwd in a sub-folder reaches the whole root, nothing past it", async () => {
    const up = await run("read_file", { path: "../secret-link.txt" }, { cwd: join(work, "src") });
    expect(up.error?.code).toBe("outside_workspace");
    const sibling = await run("list_dir", { path: ".." }, { cwd: join(work, "src") });
    expect(sibling.error).toBeUndefined();
    expect((sibling.result as { entries: Array<{ name: string }> }).entries.map((e) => e.name)).toContain("src");
    expect((await run("read_file", { path: "../../outside/secret.txt" }, { cwd: join(work, "src") })).error?.code).toBe("outside_workspace");
  });

  it("a profile's other root reaches that folder, for a session whose cwd lies in it", async () => {
    const r = await run("read_file", { path: "secret.txt" }, { cwd: outside, roots: [work, outside] });
    expect(r.error).toBeUndefined();
    expect((r.result as { content: string }).content).toBe("top secret\n");
    // …and a session in the work root does not reach the other root.
    expect((await run("read_file", { path: join(outside, "secret.txt") }, { roots: [work, outside] })).error?.code).toBe("outside_workspace");
  });

  it("a session whose cwd lies outside every root (or leaves one through a symlink) has no workspace", async () => {
    for (const cwd of [outside, join(work, "out-link"), "/proc/self", "/"]) {
      const r = await run("list_dir", {}, { cwd });
      expect(r.error, cwd).toMatchObject({ code: "no_workspace" });
      expect(r.error!.message, cwd).toContain(work);
    }
    // No root at all: nothing is a workspace.
    expect((await run("list_dir", {}, { roots: [] })).error?.message).toMatch(/names no workspace roots/);
  });

  it("a root that is the file system's root, or under /proc, reaches nothing even if it got here", async () => {
    for (const roots of [["/"], ["/proc"]]) {
      const r = await run("read_file", { path: "etc/hostname" }, { cwd: roots[0]!, roots });
      expect(r.error?.code, roots[0]).toBe("no_workspace");
    }
  });

  it("a session without a cwd has no workspace", async () => {
    const tool = tools().get("list_dir")!;
    const c = ctx(null);
    const r = await executeTool(tool, {}, c, { timeoutMs: 60_000, clock: systemClock, logger: silentLogger() });
    expect(r.error).toMatchObject({ code: "no_workspace" });
  });
});

describe("terminal", () => {
  it("returns exit code, duration and output (stdout and stderr merged)", async () => {
    const r = await run("terminal", { command: "echo out; echo err >&2; exit 3" });
    expect(r.error).toBeUndefined();
    expect(r.result).toMatchObject({ exit_code: 3, timed_out: false, output: "out\nerr\n", cwd: ".", elided_bytes: 0 });
    expect(typeof (r.result as { duration_ms: number }).duration_ms).toBe("number");
    expect(r.content).toContain("exit code 3");
  });

  it("caps long output: head and tail kept, the middle elided and said so", async () => {
    // 200,000 numbered lines: far over the 32 KiB kept.
    const r = await run("terminal", { command: "seq 1 200000" });
    const res = r.result as { output: string; output_bytes: number; elided_bytes: number };
    expect(res.output_bytes).toBe(1_288_895);
    expect(res.elided_bytes).toBe(res.output_bytes - 32 * 1024);
    expect(res.output.startsWith("1\n2\n3\n")).toBe(true);
    expect(res.output.endsWith("199999\n200000\n")).toBe(true);
    expect(res.output).toMatch(/\[… 1256127 bytes of output elided/);
    expect(res.output).not.toContain("\n100000\n");
  });

  it("kills a command at its timeout_s (FakeClock) and reports it", async () => {
    const clock = new FakeClock();
    const tool = tools(clock).get("terminal")!;
    // The command says when it is under way (a file): under load the sandbox can take longer to
    // start than a fixed wait, and a kill before `echo` would leave no output to check.
    const flag = join(work, `started-${process.pid}-${Date.now()}.flag`);
    const pending = executeTool(tool, { command: `echo started; touch ${flag}; sleep 30`, timeout_s: 5 }, ctx(), { timeoutMs: 600_000, clock, logger: silentLogger() });
    // Wait for the spawn (real I/O): the tool then holds its timeout timer (plus the executor's).
    for (let i = 0; i < 1000 && (clock.pending < 2 || !existsSync(flag)); i++) await new Promise((r) => setTimeout(r, 10));
    await clock.advance(4_999);
    let settled = false;
    void pending.then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(settled).toBe(false);
    await clock.advance(1);
    // The kill is real: wait for the exit, then let the drain timer run.
    for (let i = 0; i < 200 && !settled; i++) {
      await new Promise((r) => setTimeout(r, 10));
      await clock.advance(100);
    }
    const r = await pending;
    expect(r.result).toMatchObject({ timed_out: true, exit_code: null, signal: "SIGKILL", output: "started\n" });
    expect(r.content).toMatch(/timed out/);
  });

  it("refuses unknown arguments by name", async () => {
    const r = await run("terminal", { command: "true", shell: "bash" });
    expect(r.error).toMatchObject({ code: "invalid_arguments" });
    expect(r.error!.message).toMatch(/shell/);
  });

  it("keeps the gateway's environment out of the command's: only the allowlist (PATH, HOME, LANG, TERM, the profile's names)", async () => {
    const secrets = { TETHER_API_KEY: "gw-secret", SOME_SERVICE_TOKEN: "tok-secret", GITHUB_PAT: "ghp-secret", DATABASE_URL: "postgres://u:pw-secret@db/x", STRIPE_SK: "sk-secret", PASSED_ON: "shown" };
    Object.assign(process.env, secrets);
    try {
      for (const sandbox of ["bwrap", "none"] as const) {
        const r = await run("terminal", { command: "env" }, { settings: { sandbox, env: ["PASSED_ON"] } });
        const out = (r.result as { output: string }).output;
        expect(out, sandbox).toContain("PATH=");
        expect(out, sandbox).toContain("PASSED_ON=shown");
        for (const v of ["gw-secret", "tok-secret", "ghp-secret", "pw-secret", "sk-secret"]) expect(out, sandbox).not.toContain(v);
        const names = out.split("\n").filter((l) => l.includes("=")).map((l) => l.slice(0, l.indexOf("=")));
        expect(names.every((n) => ["PATH", "HOME", "LANG", "TERM", "PASSED_ON", "PWD", "SHLVL", "OLDPWD"].includes(n)), names.join(",")).toBe(true);
      }
    } finally {
      for (const k of Object.keys(secrets)) delete process.env[k];
    }
  });

  it("where the sandbox cannot run, the terminal refuses, saying why and what to set; sandbox: none runs without it", async () => {
    const missing = { bwrap: "/nonexistent/bwrap" };
    const r = await run("terminal", { command: "echo ran > refused.txt" }, { settings: missing });
    expect(r.error).toMatchObject({ layer: "tool", code: "sandbox_unavailable" });
    expect(r.error!.message).toMatch(/\/nonexistent\/bwrap is not installed.*tools\.workspace\.sandbox: none/);
    expect(existsSync(join(work, "refused.txt"))).toBe(false);
    const none = await run("terminal", { command: "echo ran" }, { settings: { ...missing, sandbox: "none" } });
    expect(none.result).toMatchObject({ exit_code: 0, output: "ran\n" });
  });

  it("without a session's processes, background is refused", async () => {
    const r = await run("terminal", { command: "sleep 1", background: true });
    expect(r.error).toMatchObject({ code: "invalid_arguments", message: expect.stringMatching(/background processes are not available/) });
  });

  it("describes a call for its approval: the exact command and the absolute cwd", () => {
    const t = tools().get("terminal")!;
    expect(t.describe!({ command: "rm -rf build", cwd: "src" }, { cwd: work })).toEqual({ command: "rm -rf build", cwd: join(work, "src") });
  });
});

describe.skipIf(!sandbox.available)("the command sandbox (bubblewrap)", () => {
  const sh = async (command: string, opts: { settings?: Partial<WorkspaceSettings>; protect?: string[]; cwd?: string; roots?: string[] } = {}) => {
    const r = await run("terminal", { command }, opts);
    expect(r.error, command).toBeUndefined();
    return r.result as { output: string; exit_code: number | null };
  };

  it("its own PID namespace: the gateway is not its parent, /proc holds its own processes only", async () => {
    const r = await sh("echo pid=$$ ppid=$PPID; cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /proc | grep -c '^[0-9]'");
    expect(r.output).toMatch(/^pid=2 ppid=1\nbwrap /);
    expect(Number(r.output.trim().split("\n").at(-1))).toBeLessThan(6);
    expect((await sh(`test -e /proc/${process.pid}/environ && echo visible || echo absent`)).output).not.toContain("visible");
  });

  it("the workspace is writable; the system read-only; /tmp and HOME its own and empty; other folders absent", async () => {
    const r = await sh("echo ok > written.txt && cat written.txt; touch /usr/x 2>&1; touch /etc/x 2>&1; echo tmp: $(ls -A /tmp); echo home: $(ls -A \"$HOME\" | wc -l); ls /var 2>&1");
    expect(readFileSync(join(work, "written.txt"), "utf8")).toBe("ok\n");
    expect(r.output).toMatch(/touch: cannot touch '\/usr\/x': Read-only file system/);
    expect(r.output).toMatch(/touch: cannot touch '\/etc\/x': Read-only file system/);
    // /tmp holds only the way to the workspace (it lies under /tmp here); HOME is empty.
    expect(r.output).toContain(`tmp: ${work.split("/")[2]}\nhome: 0\n`);
    expect(r.output).toMatch(/\/var': No such file or directory/);
    expect(existsSync("/usr/x")).toBe(false);
  });

  it("only the session's root is mounted: another root and the folders beside it are absent", async () => {
    const r = await sh(`ls ${outside} 2>&1; cat ${join(outside, "secret.txt")} 2>&1`, { roots: [work, outside] });
    expect(r.output).not.toContain("top secret");
    expect(r.output).toMatch(/No such file or directory/);
  });

  it("the gateway's own paths are masked where they fall under a read-only bind", async () => {
    // /etc/hostname stands in for a data file under /etc: present, it would be readable.
    const plain = await sh("cat /etc/hostname >/dev/null && echo readable");
    expect(plain.output).toContain("readable");
    const masked = await sh("cat /etc/hostname 2>&1; echo end", { protect: ["/etc/hostname"] });
    expect(masked.output).not.toContain(readFileSync("/etc/hostname", "utf8").trim());
    expect(masked.output).toMatch(/end\n$/);
  });

  it("no capabilities, even for a root gateway: nothing can be remounted writable", async () => {
    const r = await sh("grep CapEff /proc/self/status; mount -o remount,rw /usr 2>&1 || echo refused");
    expect(r.output).toMatch(/CapEff:\s+0000000000000000/);
    expect(r.output).toContain("refused");
  });

  it("network per profile: off by default (its own namespace), the host's with network: true", async () => {
    const server = createServer((s) => s.on("error", () => {}).end("hello\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as AddressInfo).port;
    const probe = `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>{console.log('connected');process.exit(0)}).on('error',(e)=>{console.log('refused',e.code);process.exit(0)})"`;
    try {
      expect((await sh(probe)).output).toMatch(/^refused ECONNREFUSED/);
      expect((await sh(probe, { settings: { network: true } })).output).toBe("connected\n");
    } finally {
      server.close();
    }
  });

  it("what a foreground command leaves behind (setsid, timeout) ends with it", async () => {
    const marker = uniqueMarker();
    try {
      const r = await sh(`setsid sleep ${marker} & timeout 100 sleep ${marker} & echo started`);
      expect(r.output).toBe("started\n");
      expect(survivors(marker)).toEqual([]);
    } finally {
      killSurvivors(marker);
    }
  });
});

describe("file tools", () => {
  it("read_file pages by lines; list_dir lists; search_files finds", async () => {
    const read = await run("read_file", { path: "src/a.txt", offset_line: 2, max_lines: 1 });
    expect(read.result).toEqual({ path: join("src", "a.txt"), content: "two", first_line: 2, last_line: 2, size: 14, truncated: true, next_offset_line: 3 });
    const whole = await run("read_file", { path: "src/a.txt" });
    expect(whole.result).toEqual({ path: join("src", "a.txt"), content: "one\ntwo\nthree\n", first_line: 1, last_line: 4, size: 14, total_lines: 4 });
    const list = await run("list_dir", {});
    expect((list.result as { entries: Array<{ name: string; type: string }> }).entries).toEqual(
      expect.arrayContaining([{ name: "src", type: "dir" }, { name: "out-link", type: "symlink" }]),
    );
    const found = await run("search_files", { pattern: "^t" });
    // The symlink out is never followed: only the workspace's own file matches.
    expect((found.result as { matches: unknown[] }).matches).toEqual([
      { file: join("src", "a.txt"), line: 2, text: "two" },
      { file: join("src", "a.txt"), line: 3, text: "three" },
    ]);
    expect((await run("search_files", { pattern: "(" })).error?.code).toBe("invalid_arguments");
  });

  it("write_file creates folders; edit_file replaces an exact match and returns a diff", async () => {
    const w = await run("write_file", { path: "new/dir/b.txt", content: "alpha\nbeta\ngamma\n" });
    expect(w.result).toEqual({ path: join("new", "dir", "b.txt"), bytes: 17, created: true });
    const e = await run("edit_file", { path: "new/dir/b.txt", old_string: "beta", new_string: "BETA" });
    expect(readFileSync(join(work, "new", "dir", "b.txt"), "utf8")).toBe("alpha\nBETA\ngamma\n");
    expect((e.result as { diff: string }).diff).toBe(
      ["--- a/new/dir/b.txt", "+++ b/new/dir/b.txt", "@@ -1,4 +1,4 @@", " alpha", "-beta", "+BETA", " gamma", " "].join("\n"),
    );
    expect((await run("edit_file", { path: "new/dir/b.txt", old_string: "nope", new_string: "x" })).error?.code).toBe("no_match");
    writeFileSync(join(work, "twice.txt"), "x x");
    expect((await run("edit_file", { path: "twice.txt", old_string: "x", new_string: "y" })).error?.code).toBe("ambiguous_match");
    const all = await run("edit_file", { path: "twice.txt", old_string: "x", new_string: "y", replace_all: true });
    expect(all.result).toMatchObject({ replacements: 2 });
    expect(readFileSync(join(work, "twice.txt"), "utf8")).toBe("y y");
  });
});

describe("the workspace source", () => {
  const configWith = (tools: Record<string, unknown>) => toolsConfigFor(resolveConfig({}, { tools } as never), "default");

  it("offers nothing unless the profile names a root; then reads auto and the rest ask", async () => {
    for (const tools of [{}, { workspace: true }, { workspace: { roots: [] } }, { workspace: false, workspace_roots: [work] }]) {
      const cfg = configWith(tools);
      const off = new ToolRuntime({ builtin: createDefaultTools(), sources: [new WorkspaceSource({ clock: systemClock, config: cfg })], config: cfg, logger: silentLogger() });
      const none = await off.offer({ sessionId: "s", signal: new AbortController().signal });
      expect(none.get("terminal"), JSON.stringify(tools)).toBeUndefined();
    }

    const config = configWith({ workspace: { roots: [work] } });
    const on = new ToolRuntime({ builtin: createDefaultTools(), sources: [new WorkspaceSource({ clock: systemClock, config })], config, logger: silentLogger() });
    const offer = await on.offer({ sessionId: "s", signal: new AbortController().signal });
    const policies = Object.fromEntries(
      ["terminal", "process_output", "process_kill", "read_file", "list_dir", "search_files", "write_file", "edit_file"].map((n) => [n, offer.get(n)?.policy]),
    );
    expect(policies).toEqual({
      terminal: "ask",
      process_output: "auto",
      process_kill: "ask",
      read_file: "auto",
      list_dir: "auto",
      search_files: "auto",
      write_file: "ask",
      edit_file: "ask",
    });
    expect(offer.get("terminal")!.source).toBe("workspace");
  });

  it("ToolOutput of the terminal is the result plus a text for the model", async () => {
    const r = await tools().get("terminal")!.execute({ command: "echo hi" }, ctx());
    expect(r).toBeInstanceOf(ToolOutput);
  });
});
