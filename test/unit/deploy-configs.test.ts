/**
 * The samples in deploy/ say what docs/deploy.md says, and the settings that keep Tether's streams
 * alive behind a proxy are there: WebSocket upgrade, SSE without buffering, timeouts longer than
 * the heartbeat, the body limit, a graceful stop that outlasts the shutdown flush. The systemd unit
 * is also parsed by `systemd-analyze verify` where the machine has it (skipped visibly otherwise).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
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
    expect(stop).toBeGreaterThan(defaults.lifecycle.shutdown_flush_s);
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

  const analyze = spawnSync("systemd-analyze", ["--version"], { encoding: "utf8" });
  if (analyze.status !== 0) console.warn("[tether tests] systemd-analyze is not installed: the unit's parse check is SKIPPED");
  it.skipIf(analyze.status !== 0)("parses without a warning (systemd-analyze verify)", () => {
    const r = spawnSync("systemd-analyze", ["verify", `${DEPLOY}tether.service`], { encoding: "utf8" });
    // Unknown keys and bad values are warnings on stderr (the exit code stays 0).
    const warnings = r.stderr.split("\n").filter((l) => l.includes("tether.service"));
    expect(warnings).toEqual([]);
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
