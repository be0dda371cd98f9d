/**
 * The web client's static files go out compressed (#33): brotli when the browser accepts it, else
 * gzip, else as they are; `Vary: Accept-Encoding` on each, the bytes decompress to the file on disk.
 * A real gateway on 127.0.0.1 serving a build folder made here, read with node:http (which, unlike
 * fetch, neither asks for nor undoes an encoding by itself).
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { Hono } from "hono";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mountWebClient, pickEncoding } from "../../src/gateway/http/web-client.js";
import type { AppEnv } from "../../src/gateway/http/context.js";

function get(port: number, path: string, acceptEncoding?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: acceptEncoding ? { "accept-encoding": acceptEncoding } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("web client static files are compressed", () => {
  const root = mkdtempSync(join(tmpdir(), "tether-web-"));
  const js = `export const words = ${JSON.stringify(Array.from({ length: 4000 }, (_, i) => `word${i % 50}`))};\n`;
  let server: ServerType;
  let port = 0;

  beforeAll(async () => {
    mkdirSync(join(root, "assets"));
    writeFileSync(join(root, "assets", "index-abc.js"), js);
    writeFileSync(join(root, "assets", "tiny.css"), "a{}");
    writeFileSync(join(root, "index.html"), `<!doctype html><title>t</title>${"<p>x</p>".repeat(300)}`);
    const app = new Hono<AppEnv>();
    mountWebClient(app, { root });
    await new Promise<void>((r) => {
      server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, (info) => {
        port = info.port;
        r();
      });
    });
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(root, { recursive: true, force: true });
  });

  it("brotli first, then gzip, else identity; the bytes are the file's", async () => {
    const br = await get(port, "/assets/index-abc.js", "gzip, deflate, br");
    expect(br.headers["content-encoding"]).toBe("br");
    expect(br.headers["vary"]).toBe("accept-encoding");
    expect(Number(br.headers["content-length"])).toBe(br.body.length);
    expect(br.body.length).toBeLessThan(js.length / 4);
    expect(brotliDecompressSync(br.body).toString()).toBe(js);

    const gz = await get(port, "/assets/index-abc.js", "gzip");
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gz.body).toString()).toBe(js);
    // The same again comes from memory, byte for byte.
    expect((await get(port, "/assets/index-abc.js", "gzip")).body.equals(gz.body)).toBe(true);

    const plain = await get(port, "/assets/index-abc.js");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.body.toString()).toBe(js);
    // Refused by q=0: not sent.
    expect((await get(port, "/assets/index-abc.js", "br;q=0, gzip;q=0")).headers["content-encoding"]).toBeUndefined();

    // The page itself too (its CSP still on it); a file too small to gain is sent as it is.
    const page = await get(port, "/", "br");
    expect(page.headers["content-encoding"]).toBe("br");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect((await get(port, "/assets/tiny.css", "br")).headers["content-encoding"]).toBeUndefined();
  });

  it("reads Accept-Encoding as the browser wrote it", () => {
    expect(pickEncoding("gzip, deflate, br, zstd")).toBe("br");
    expect(pickEncoding("gzip;q=1.0, br;q=0")).toBe("gzip");
    expect(pickEncoding("identity")).toBeUndefined();
    expect(pickEncoding(undefined)).toBeUndefined();
  });
});
