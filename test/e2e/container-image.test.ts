/**
 * The container image (Dockerfile) and deploy/compose.yaml, checked without a Docker engine (this
 * machine and CI have none): the Dockerfile is parsed and validated by the Docker language
 * server's own parser and validator (dockerfile-ast, dockerfile-utils), then held to each rule
 * docs/deploy.md (*Containers*) states — multi-stage, not root, tini as PID 1 with node under it,
 * exec-form CMD on node itself (never npm: SIGTERM would not reach the gateway), a HEALTHCHECK on
 * `/readyz`. Its CMD and HEALTHCHECK are then run for real, with the image's ENV, against a real
 * gateway: healthy when ready, unhealthy while draining, exit 0 on SIGTERM. hadolint runs where it
 * is installed (skipped visibly otherwise: Debian has no package).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerfileParser, type Instruction } from "dockerfile-ast";
import { validate } from "dockerfile-utils";
import { parse as parseYaml } from "yaml";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";

const REPO = new URL("../../", import.meta.url).pathname;
const text = readFileSync(join(REPO, "Dockerfile"), "utf8");
const dockerfile = DockerfileParser.parse(text);
const instructions = dockerfile.getInstructions();
const defaults = resolveConfig({}, {});

/** The instructions of the last stage (the image that runs). */
const finalStage = (() => {
  const froms = instructions.map((i, n) => (i.getKeyword() === "FROM" ? n : -1)).filter((n) => n >= 0);
  return instructions.slice(froms.at(-1));
})();
const inFinal = (keyword: string): Instruction[] => finalStage.filter((i) => i.getKeyword() === keyword);
/** An exec-form (JSON array) instruction's words; undefined for the shell form. */
function execForm(i: Instruction): string[] | undefined {
  const content = i.getArgumentsContent() ?? "";
  const json = content.replace(/^CMD\s+/, "");
  if (!json.trim().startsWith("[")) return undefined;
  return JSON.parse(json) as string[];
}
const env = Object.fromEntries(dockerfile.getENVs().flatMap((e) => e.getProperties().map((p) => [p.getName(), p.getValue() ?? ""])));

describe("Dockerfile", () => {
  it("parses and validates without a diagnostic (the validator does catch a broken file)", () => {
    expect(validate(text).map((d) => `${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
    expect(validate("FROM node:20\nRUNN x\nHEALTHCHECK --intervl=1s CMD x\n").length).toBeGreaterThan(0);
  });

  it("builds in one stage and runs in another, from a pinned Node 20 image (package.json engines)", () => {
    const froms = dockerfile.getFROMs();
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(froms[0]!.getBuildStage()).toBe("build");
    for (const f of froms) {
      expect(f.getImageName()).toBe("node");
      expect(f.getImageTag()).toMatch(/^20-/);
    }
    // The run stage takes the build's output, not the build context.
    const copies = dockerfile.getCOPYs().filter((c) => finalStage.includes(c));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) expect(c.getFromFlag()?.getValue()).toBe("build");
    // What it copies is what the package ships and runs (package.json `files`, the bin).
    const sources = copies.flatMap((c) => c.getArguments().slice(0, -1).map((a) => a.getValue().replace(/^\/src\//, "")));
    expect(sources).toEqual(expect.arrayContaining(["bin/tether.js", "dist", "web/dist", "node_modules", "package.json"]));
  });

  it("runs as a user that is not root, with the store in a volume it owns", () => {
    const users = inFinal("USER").map((u) => u.getArgumentsContent());
    expect(users.length).toBe(1);
    expect(users[0]).not.toMatch(/^(root|0)(:|$)/);
    const volume = inFinal("VOLUME").map((v) => JSON.parse(v.getArgumentsContent()!) as string[])[0]!;
    expect(env.TETHER_DB!.startsWith(`${volume[0]}/`)).toBe(true);
    expect(text).toMatch(/chown node:node \/data/);
  });

  it("has tini as PID 1 and node itself under it — never npm or a shell, which would not pass SIGTERM on", () => {
    const entry = inFinal("ENTRYPOINT").map(execForm);
    expect(entry).toEqual([["/usr/bin/tini", "--"]]);
    expect(finalStage.some((i) => i.getKeyword() === "RUN" && /apt-get install[^&]*\btini\b/.test(i.getArgumentsContent()!))).toBe(true);
    const cmd = inFinal("CMD").map(execForm);
    expect(cmd).toEqual([["node", "bin/tether.js", "serve"]]);
    expect(text).not.toMatch(/\b(npm start|npx tether)\b/);
    expect(inFinal("STOPSIGNAL").map((s) => s.getArgumentsContent())).toEqual(["SIGTERM"]);
  });

  it("checks health on /readyz, in exec form, on the port it listens on", () => {
    const [health] = dockerfile.getHEALTHCHECKs();
    expect(health).toBeDefined();
    const words = execForm(health!);
    expect(words?.slice(0, 2)).toEqual(["node", "-e"]);
    expect(words![2]).toContain("/readyz");
    expect(words![2]).toContain("process.env.TETHER_PORT");
    expect(inFinal("EXPOSE").map((e) => e.getArgumentsContent())).toEqual([env.TETHER_PORT]);
    expect(Number(env.TETHER_PORT)).toBe(defaults.port);
  });

  it("keeps apt lean (no recommends, lists removed) and the build context free of the host's builds", () => {
    for (const run of instructions.filter((i) => i.getKeyword() === "RUN" && /apt-get install/.test(i.getArgumentsContent()!))) {
      const body = run.getArgumentsContent()!;
      expect(body).toContain("--no-install-recommends");
      expect(body).toContain("rm -rf /var/lib/apt/lists/*");
    }
    const ignored = readFileSync(join(REPO, ".dockerignore"), "utf8").split("\n");
    for (const path of ["node_modules", "dist", "web/dist", ".git", "*.db"]) expect(ignored).toContain(path);
  });

  const hadolint = spawnSync("hadolint", ["--version"], { encoding: "utf8" });
  if (hadolint.status !== 0) console.warn("[tether tests] hadolint is not installed: the Dockerfile's hadolint check is SKIPPED (its rules are checked above)");
  it.skipIf(hadolint.status !== 0)("is hadolint-clean", () => {
    const r = spawnSync("hadolint", [join(REPO, "Dockerfile")], { encoding: "utf8" });
    expect(r.stdout + r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("the image's CMD and HEALTHCHECK, run for real with its ENV", () => {
  it("healthy once ready, unhealthy while draining, exit 0 on SIGTERM", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-image-"));
    const port = String(await freePort());
    const runEnv = {
      ...process.env,
      ...env,
      // A temp folder for /data, a free port for 8787; 0.0.0.0 needs a key, as in the image.
      TETHER_DB: join(dir, "tether.db"),
      TETHER_CONFIG: join(dir, "config.yaml"),
      TETHER_PORT: port,
      TETHER_API_KEYS: "ops:image-test-key",
      TETHER_DRAIN_S: "2",
      TETHER_LOG_LEVEL: "info",
    };
    const [command, ...args] = execForm(inFinal("CMD")[0]!)!;
    const node = spawn(command === "node" ? process.execPath : command!, args, { cwd: REPO, env: runEnv, stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => node.once("exit", (code) => resolve(code)));
    let logs = "";
    node.stderr!.on("data", (d: Buffer) => (logs += d.toString()));
    const [hcCommand, ...hcArgs] = execForm(dockerfile.getHEALTHCHECKs()[0]!)!;
    const healthcheck = () => spawnSync(hcCommand === "node" ? process.execPath : hcCommand!, hcArgs, { env: runEnv, encoding: "utf8", timeout: 10_000 }).status;
    try {
      await new Promise<void>((resolve, reject) => {
        let out = "";
        node.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("tether listening on")) resolve();
        });
        void exited.then((code) => reject(new Error(`exited ${code} before listening`)));
      });
      expect(healthcheck()).toBe(0);
      node.kill("SIGTERM");
      await expect.poll(() => logs.includes('"msg":"draining'), { timeout: 10_000 }).toBe(true);
      // Draining: /readyz answers 503, so the container turns unhealthy before it stops.
      expect(healthcheck()).toBe(1);
      expect(await exited).toBe(0);
    } finally {
      if (node.exitCode === null) node.kill("SIGKILL");
    }
  });
});

describe("deploy/compose.yaml", () => {
  const compose = parseYaml(readFileSync(join(REPO, "deploy/compose.yaml"), "utf8")) as {
    services: Record<string, { image?: string; build?: { context: string; dockerfile: string }; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; healthcheck?: { test: string[] }; stop_grace_period?: string; volumes?: string[] }>;
  };

  it("runs the image on PostgreSQL and Redis, started once they are healthy", () => {
    const { tether, postgres, redis } = compose.services;
    expect(postgres?.image).toMatch(/^postgres:\d+/);
    expect(redis?.image).toMatch(/^redis:\d+/);
    expect(postgres!.healthcheck!.test).toContain("pg_isready");
    expect(redis!.healthcheck!.test).toContain("ping");
    expect(existsSync(join(REPO, "deploy", tether!.build!.context, tether!.build!.dockerfile))).toBe(true);
    expect(tether!.depends_on).toEqual({ postgres: { condition: "service_healthy" }, redis: { condition: "service_healthy" } });
    expect(tether!.environment!.TETHER_STORE).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
    expect(tether!.environment!.TETHER_BUS).toBe("redis://redis:6379");
    expect(tether!.volumes).toContain(`tether-data:${env.TETHER_DB!.slice(0, env.TETHER_DB!.lastIndexOf("/"))}`);
  });

  it("takes the API keys from the environment (required, never written here) and stops within its grace", () => {
    const { tether } = compose.services;
    expect(tether!.environment!.TETHER_API_KEYS).toMatch(/^\$\{TETHER_API_KEYS:\?/);
    const grace = Number(/^(\d+)s$/.exec(tether!.stop_grace_period!)![1]);
    expect(grace).toBeGreaterThan(Number(tether!.environment!.TETHER_DRAIN_S) + defaults.lifecycle.shutdown_flush_s);
  });
});
