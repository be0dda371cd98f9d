/**
 * The samples in deploy/ say what docs/deploy.md says, and the settings that keep Tether's streams
 * alive behind a proxy are there: WebSocket upgrade, SSE without buffering, timeouts longer than
 * the heartbeat, the body limit, a graceful stop that outlasts the drain and the shutdown flush,
 * and what a rolling restart needs (test/faults/rolling-restart-nginx.test.ts drives it).
 *
 * Each file is also checked by its own tool, Debian 12's versions: `nginx -t` (1.22), `caddy
 * validate` and `caddy adapt` (2.6), `systemd-analyze verify` and `security` (252). A tool the
 * machine lacks is skipped visibly (.ci/run installs nginx and caddy).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";

const DEPLOY = new URL("../../deploy/", import.meta.url).pathname;
const read = (name: string) => readFileSync(`${DEPLOY}${name}`, "utf8");
/** The file without comments, so a commented-out line never passes for a setting. */
const settings = (text: string) =>
  text
    .split("\n")
    .map((l) => l.replace(/#.*$/, "").trim())
    .filter((l) => l !== "")
    .join("\n");

const defaults = resolveConfig({}, {});
/** A tool by name, or undefined (with a warning: its checks are skipped, never silently). */
function tool(name: string, candidates: string[], versionArgs: string[]): string | undefined {
  const found = candidates.find((p) => (p.includes("/") ? existsSync(p) : spawnSync(p, versionArgs).status === 0));
  if (!found) console.warn(`[tether tests] ${name} is not installed: its check of the deploy files is SKIPPED`);
  return found;
}
const NGINX = tool("nginx", ["/usr/sbin/nginx", "/usr/bin/nginx"], ["-v"]);
const CADDY = tool("caddy", ["caddy"], ["version"]);
const SYSTEMD_ANALYZE = tool("systemd-analyze", ["systemd-analyze"], ["--version"]);
const seconds = (v: string) => Number(/^(\d+)(s|m|h)?$/.exec(v)![1]) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[/^(\d+)(s|m|h)?$/.exec(v)![2] ?? "s"]!;

describe("deploy/nginx.conf", () => {
  const conf = settings(read("nginx.conf"));

  it("passes WebSocket upgrades through on HTTP/1.1", () => {
    expect(conf).toMatch(/map \$http_upgrade \$connection_upgrade \{/);
    expect(conf).toContain("proxy_http_version 1.1;");
    expect(conf).toContain("proxy_set_header Upgrade $http_upgrade;");
    expect(conf).toContain("proxy_set_header Connection $connection_upgrade;");
  });

  it("never buffers SSE, and times out later than any quiet stream", () => {
    expect(conf).toContain("proxy_buffering off;");
    expect(conf).toContain("proxy_cache off;");
    for (const key of ["proxy_read_timeout", "proxy_send_timeout"]) {
      const m = new RegExp(`${key} (\\w+);`).exec(conf);
      expect(m, key).not.toBeNull();
      // Above the WebSocket ping interval and the SSE keep-alive, with room to spare.
      expect(seconds(m![1]!)).toBeGreaterThan((3 * Math.max(defaults.heartbeatMs, defaults.http.sse_keepalive_ms)) / 1000);
    }
  });

  it("never marks the only live node down, and sends a request whose connection failed to the next node", () => {
    const servers = [...conf.matchAll(/^\s*server (\S+)([^;]*);$/gm)].filter((m) => m[1]!.includes(":"));
    expect(servers.length).toBeGreaterThan(0);
    for (const [, , params] of servers) expect(params).toMatch(/\bmax_fails=0\b/);
    // No pooled connections a stopping node could be closing while nginx writes into one.
    const upstream = /upstream tether \{([^}]*)\}/.exec(conf)![1]!;
    expect(upstream).not.toMatch(/\bkeepalive\b/);
    const next = /proxy_next_upstream ([^;]+);/.exec(conf)![1]!.split(/\s+/);
    expect(next).toEqual(expect.arrayContaining(["error", "non_idempotent"]));
    // Buffered request bodies (the default), so a request can be sent to the next node whole.
    expect(conf).not.toMatch(/proxy_request_buffering off/);
  });

  it.skipIf(!NGINX)("passes `nginx -t` (Debian 12's 1.22: no `http2` directive), with a certificate where letsencrypt's would be", () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-nginx-t-"));
    const key = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-subj", "/CN=tether.example.com"], { encoding: "utf8" });
    expect(key.status, key.stderr).toBe(0);
    const site = read("nginx.conf")
      .replace(/\/etc\/letsencrypt\/live\/[^/]+\/fullchain\.pem/, join(dir, "cert.pem"))
      .replace(/\/etc\/letsencrypt\/live\/[^/]+\/privkey\.pem/, join(dir, "key.pem"));
    writeFileSync(join(dir, "tether.conf"), site);
    // The http context Debian's /etc/nginx/nginx.conf gives a conf.d file, with paths of its own.
    writeFileSync(join(dir, "nginx.conf"), `pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log;\nevents {}\nhttp {\n  access_log off;\n  include ${dir}/tether.conf;\n}\n`);
    const r = spawnSync(NGINX!, ["-t", "-p", dir, "-c", join(dir, "nginx.conf")], { encoding: "utf8" });
    expect(r.stderr).toContain("test is successful");
    expect(r.stderr).not.toMatch(/\[(warn|emerg)\]/);
    expect(r.status).toBe(0);
  });

  it("terminates TLS and lets Tether's own body limit through", () => {
    expect(conf).toMatch(/listen 443 ssl( http2)?;/);
    expect(conf).toMatch(/ssl_certificate\s+\S+;/);
    const body = /client_max_body_size (\d+)m;/.exec(conf);
    expect(Number(body![1]) * 2 ** 20).toBeGreaterThanOrEqual(defaults.http.max_body_bytes);
    expect(conf).toMatch(/proxy_pass http:\/\/tether;/);
    expect(conf).not.toMatch(/ip_hash|sticky/);
  });
});

describe("deploy/Caddyfile", () => {
  const conf = settings(read("Caddyfile"));

  it("takes a draining node out by its /readyz, retries failed dials elsewhere, and has no passive check", () => {
    expect(conf).toContain("health_uri /readyz");
    // The drain (TETHER_DRAIN_S in the unit) outlasts a health interval and the pool's idle time.
    const drain = Number(/^Environment=TETHER_DRAIN_S=(\S+)$/m.exec(read("tether.service"))![1]);
    expect(seconds(/health_interval (\w+)/.exec(conf)![1]!)).toBeLessThan(drain);
    expect(seconds(/keepalive (\w+)/.exec(conf)![1]!)).toBeLessThan(drain);
    expect(conf).toMatch(/lb_try_duration \w+/);
    // Passive checks (fail_duration) could take the only live node out on a failed request.
    expect(conf).not.toMatch(/\b(fail_duration|max_fails|unhealthy_status)\b/);
  });

  it.skipIf(!CADDY)("passes `caddy validate` (Debian 12's 2.6), and adapts to a body limit of at least Tether's 10 MiB", () => {
    const file = join(DEPLOY, "Caddyfile");
    const v = spawnSync(CADDY!, ["validate", "--config", file, "--adapter", "caddyfile"], { encoding: "utf8" });
    expect(v.stdout + v.stderr).toContain("Valid configuration");
    expect(v.status).toBe(0);
    const a = spawnSync(CADDY!, ["adapt", "--config", file, "--adapter", "caddyfile"], { encoding: "utf8" });
    expect(a.status, a.stderr).toBe(0);
    const json = a.stdout;
    const maxSize = Number(/"max_size":\s*(\d+)/.exec(json)![1]);
    expect(maxSize).toBeGreaterThanOrEqual(defaults.http.max_body_bytes);
    expect(json).toMatch(/"uri":\s*"\/readyz"/);
    expect(json).not.toContain('"passive"');
  });

  it("proxies to the loopback gateway, flushing SSE at once, with long stream timeouts", () => {
    expect(conf).toMatch(/reverse_proxy 127\.0\.0\.1:8787 \{/);
    expect(conf).toContain("flush_interval -1");
    expect(conf).toContain("health_uri /readyz");
    const timeout = /read_timeout (\w+)/.exec(conf);
    expect(seconds(timeout![1]!)).toBeGreaterThan((3 * defaults.heartbeatMs) / 1000);
    // Compression would hold SSE events back.
    expect(conf).not.toMatch(/^\s*encode\b/m);
  });
});

describe("deploy/tether.service", () => {
  const unit = read("tether.service");
  const conf = settings(unit);

  it("runs tether serve on loopback, stops with SIGTERM and gives the flush time to finish", () => {
    expect(conf).toMatch(/^ExecStart=.*tether(\.js)? serve$/m);
    expect(conf).toContain("Environment=TETHER_HOST=127.0.0.1");
    expect(conf).toContain("KillSignal=SIGTERM");
    expect(conf).toContain("ExecReload=/bin/kill -HUP $MAINPID");
    const stop = Number(/^TimeoutStopSec=(\d+)$/m.exec(conf)![1]);
    const drain = Number(/^Environment=TETHER_DRAIN_S=(\S+)$/m.exec(conf)![1]);
    expect(stop).toBeGreaterThan(drain + defaults.lifecycle.shutdown_flush_s);
    expect(conf).toMatch(/^Restart=on-failure$/m);
    // Secrets come from a file, never the unit.
    expect(conf).toMatch(/^EnvironmentFile=-?\/etc\/tether\/env$/m);
    expect(conf).not.toMatch(/TETHER_API_KEYS?=|TETHER_PROVIDER_KEY=/);
    expect(conf).toContain("ReadWritePaths=/var/lib/tether");
  });

  it("lists the proxies' public name in TETHER_HOSTS (any other Host is refused, see request-guard.ts)", () => {
    const hosts = /^Environment=TETHER_HOSTS=(\S+)$/m.exec(conf)?.[1]?.split(",") ?? [];
    const nginxName = /server_name (\S+);/.exec(settings(read("nginx.conf")))![1]!;
    const caddyName = /^(\S+) \{/m.exec(settings(read("Caddyfile")))![1]!;
    expect(hosts).toContain(nginxName);
    expect(hosts).toContain(caddyName);
    expect(resolveConfig({ TETHER_HOSTS: hosts.join(",") }).server.hosts).toEqual(hosts);
  });

  it.skipIf(!SYSTEMD_ANALYZE)("parses without a warning (systemd-analyze verify)", () => {
    const r = spawnSync(SYSTEMD_ANALYZE!, ["verify", `${DEPLOY}tether.service`], { encoding: "utf8" });
    // Unknown keys and bad values are warnings on stderr (the exit code stays 0).
    const warnings = r.stderr.split("\n").filter((l) => l.includes("tether.service"));
    expect(warnings).toEqual([]);
  });

  it.skipIf(!SYSTEMD_ANALYZE)("is hardened: `systemd-analyze security` exposure at most 2.0 (OK; it was 5.8 MEDIUM), with a umask and a system-call filter", () => {
    const r = spawnSync(SYSTEMD_ANALYZE!, ["security", "--offline=true", "--no-pager", `${DEPLOY}tether.service`], { encoding: "utf8" });
    const score = Number(/Overall exposure level for tether\.service: ([\d.]+)/.exec(r.stdout)?.[1]);
    expect(score, r.stdout.slice(-2000)).toBeLessThanOrEqual(2);
    for (const key of ["UMask=", "SystemCallFilter=", "NoNewPrivileges="]) expect(r.stdout).toMatch(new RegExp(`✓ ${key}`));
    // V8's JIT needs writable executable memory: the one setting node cannot take.
    expect(conf).not.toMatch(/^MemoryDenyWriteExecute=(true|yes)$/m);
  });
});

describe("docs/deploy.md", () => {
  const doc = readFileSync(new URL("../../docs/deploy.md", import.meta.url), "utf8");
  it("points at every sample and covers TLS, keys, the upgrade path, backups, retention and traces", () => {
    for (const f of ["deploy/tether.service", "deploy/Caddyfile", "deploy/nginx.conf"]) expect(doc).toContain(f);
    for (const topic of ["## TLS", "## Keys", "## Upgrading", "pg_dump", "tether backup", "retention.ended_after_days", "OTEL_EXPORTER_OTLP_ENDPOINT"]) {
      expect(doc, topic).toContain(topic);
    }
  });
});
