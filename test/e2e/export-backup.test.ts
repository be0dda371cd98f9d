/**
 * Data the operator owns: `GET /api/sessions/{id}/export` and `tether export` (a transcript with
 * its compression lineage, jsonl or markdown, scoped to the caller's principal), and `tether
 * backup` (an online, consistent copy of the SQLite store taken while the gateway streams).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PDF, PDF_B64, PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway } from "../support/spawn-gateway.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

const run = promisify(execFile);
const BIN = new URL("../../bin/tether.js", import.meta.url).pathname;
const KEYS = { "key-alice": "alice", "key-bob": "bob" };

async function turn(sock: RpcSocket, sessionId: string, text: string, parts?: unknown[]) {
  const sub = await sock.call("prompt.submit", { session_id: sessionId, text, ...(parts ? { parts } : {}) });
  const on = sub.session_id ?? sessionId;
  await sock.waitForEvent(on, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
  return sub;
}

function exportUrl(srv: TestServer, id: string, format?: string) {
  return `${srv.url}/api/sessions/${id}/export${format ? `?format=${format}` : ""}`;
}

describe("GET /api/sessions/{id}/export", () => {
  let srv: TestServer;
  let sock: RpcSocket;
  let parent: string;
  let child: string;

  beforeAll(async () => {
    srv = await startTestServer({
      demoDelayMs: 1,
      config: { auth: { keys: KEYS }, compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } },
    });
    sock = await RpcSocket.open(`${srv.wsUrl}?token=key-alice`);
    const snap = await sock.call("session.create", { title: "Exported talk" });
    parent = snap.session_id;
    await turn(sock, parent, "todo: alpha; beta");
    await turn(sock, parent, "first question");
    await turn(sock, parent, "/compress");
    child = (await sock.waitForEvent(parent, (f) => f.type === "session.rotated")).payload.to;
    await turn(sock, parent, "after the rotation");
  });
  afterAll(async () => {
    sock.close();
    await srv.close();
  });

  it("jsonl: the whole compression lineage, oldest first, every message once, lossless", async () => {
    const res = await fetch(exportUrl(srv, child), { headers: { authorization: "Bearer key-alice" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/x-ndjson");
    expect(res.headers.get("content-disposition")).toContain(`${child}.jsonl`);
    const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: "export", version: 1, session_id: child, lineage: [parent, child] });
    const sessions = lines.filter((l) => l.type === "session");
    expect(sessions.map((s) => s.session_id)).toEqual([parent, child]);
    expect(sessions[0]).toMatchObject({ title: "Exported talk", end_reason: "compression", continued_in: child });
    expect(sessions[1]).toMatchObject({ parent_session_id: parent, end_reason: null });

    // Exactly the stored transcripts, in order, as session.messages shows them.
    for (const id of [parent, child]) {
      const page = await sock.call("session.messages", { session_id: id, limit: 1000 });
      const exported = lines.filter((l) => l.type === "message" && l.session_id === id).map(({ type: _t, session_id: _s, ...m }) => m);
      expect(exported).toEqual(page.messages);
    }
    const texts = lines.filter((l) => l.type === "message").map((l) => l.content as string);
    expect(texts).toContain("first question");
    expect(texts).toContain("after the rotation");
    expect(lines.some((l) => l.type === "message" && l.tool_calls?.[0]?.name === "todo")).toBe(true);

    // Asked by the old id, the same lineage.
    const viaParent = await fetch(exportUrl(srv, parent, "jsonl"), { headers: { authorization: "Bearer key-alice" } });
    expect(JSON.parse((await viaParent.text()).split("\n")[0]!).lineage).toEqual([parent, child]);
  });

  it("markdown: headings per session, roles, tool calls and results as code", async () => {
    const res = await fetch(exportUrl(srv, parent, "markdown"), { headers: { authorization: "Bearer key-alice" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/markdown");
    const md = await res.text();
    expect(md.startsWith("# Exported talk\n")).toBe(true);
    expect(md).toContain("compression lineage (2 sessions, oldest first)");
    expect(md).toContain(`- session: \`${child}\` (continues \`${parent}\`)`);
    expect(md).toContain("**user**");
    expect(md).toContain("first question");
    expect(md).toContain("tool call `todo`");
    expect(md).toContain("**tool result**");
    expect(md.indexOf("first question")).toBeLessThan(md.indexOf("after the rotation"));
  });

  it("jsonl keeps the attachments' bytes: one blob line per sha256 the lineage's parts name", async () => {
    const snap = await sock.call("session.create", { title: "with attachments" });
    const id = snap.session_id as string;
    const parts = [{ type: "image", data: PNG_B64 }, { type: "file", media_type: "application/pdf", filename: "r.pdf", data: PDF_B64 }];
    await turn(sock, id, "look at these", parts);
    const res = await fetch(exportUrl(srv, id), { headers: { authorization: "Bearer key-alice" } });
    const lines = (await res.text()).trimEnd().split("\n").map((l) => JSON.parse(l));
    const named = lines.filter((l) => l.type === "message").flatMap((m) => (m.parts ?? []).map((p: { sha256?: string }) => p.sha256).filter(Boolean));
    expect(new Set(named)).toEqual(new Set([sha256(PNG), sha256(PDF)]));
    const blobs = lines.filter((l) => l.type === "blob");
    expect(blobs.map((b) => b.sha256)).toEqual([sha256(PNG), sha256(PDF)].sort());
    for (const b of blobs) {
      const bytes = Buffer.from(b.data, "base64");
      expect(sha256(bytes)).toBe(b.sha256);
      expect(b.size).toBe(bytes.length);
    }
    expect(blobs.find((b) => b.sha256 === sha256(PDF))).toMatchObject({ media_type: "application/pdf", size: PDF.length });
    expect(blobs.find((b) => b.sha256 === sha256(PNG))).toMatchObject({ media_type: "image/png", size: PNG.length });
    // The export without attachments has no blob line.
    const plain = await (await fetch(exportUrl(srv, child), { headers: { authorization: "Bearer key-alice" } })).text();
    expect(plain).not.toContain('"type":"blob"');
  });

  it("markdown lists a message's attachments: kind, filename, media type, size and sha256, or the URL it was sent as", async () => {
    const snap = await sock.call("session.create", { title: "attachments in markdown" });
    const id = snap.session_id as string;
    const parts = [
      { type: "image", data: PNG_B64 },
      { type: "file", media_type: "application/pdf", filename: "q`3 report.pdf", data: PDF_B64 },
      { type: "image", url: "https://images.example.invalid/cat.png" },
    ];
    await turn(sock, id, "look at these", parts);
    const md = await (await fetch(exportUrl(srv, id, "markdown"), { headers: { authorization: "Bearer key-alice" } })).text();
    expect(md).toContain(
      [
        "attachments:",
        "",
        `- image · \`image/png\` 1\u00d71 · ${PNG.length} B · sha256 \`${sha256(PNG)}\``,
        // A backtick in the filename cannot close its code span.
        `- file \`\`q\`3 report.pdf\`\` · \`application/pdf\` · ${PDF.length} B · sha256 \`${sha256(PDF)}\``,
        "- image · `image/*` · `https://images.example.invalid/cat.png` (sent as a URL, not stored)",
      ].join("\n"),
    );
  });

  it("is scoped to the principal: another's session answers like a missing one; a bad format is refused by name", async () => {
    const bob = await fetch(exportUrl(srv, child), { headers: { authorization: "Bearer key-bob" } });
    const missing = await fetch(exportUrl(srv, "ses_nope"), { headers: { authorization: "Bearer key-bob" } });
    expect(bob.status).toBe(404);
    expect(missing.status).toBe(404);
    expect((await bob.json()).error.code).toBe((await missing.json()).error.code);
    const bad = await fetch(exportUrl(srv, child, "pdf"), { headers: { authorization: "Bearer key-alice" } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ param: "format" });
    const anonymous = await fetch(exportUrl(srv, child));
    expect(anonymous.status).toBe(401);
  });
});

describe("tether export and tether backup (CLI) against a running gateway", () => {
  it("export writes jsonl/markdown to stdout or --out; backup copies the store while turns stream", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-data-"));
    const db = join(dir, "tether.db");
    const gw = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "1" });
    try {
      const sock = await RpcSocket.open(gw.wsUrl);
      const snap = await sock.call("session.create", { title: "backed up" });
      const id = snap.session_id as string;
      await turn(sock, id, "count to 20");
      await turn(sock, id, "a picture", [{ type: "image", data: PNG_B64 }]);

      const md = await run(process.execPath, [BIN, "export", id, "--format", "markdown", "--url", gw.wsUrl]);
      expect(md.stdout).toContain("# backed up");
      expect(md.stdout).toContain(Array.from({ length: 20 }, (_, i) => i + 1).join(" "));
      const out = join(dir, "t.jsonl");
      await run(process.execPath, [BIN, "export", id, "--out", out, "--url", gw.url]);
      expect(JSON.parse(readFileSync(out, "utf8").split("\n")[0]!)).toMatchObject({ type: "export", session_id: id });
      const unknown = await run(process.execPath, [BIN, "export", "ses_nope", "--url", gw.wsUrl]).catch((e: { code: number; stderr: string }) => e);
      expect(unknown).toMatchObject({ code: 1 });
      expect((unknown as { stderr: string }).stderr).toContain("404");

      // The gateway keeps writing (a long streaming turn with checkpoints) while the copy is taken.
      const streaming = sock.call("prompt.submit", { session_id: id, text: "count to 3000" });
      await sock.waitForEvent(id, (f) => f.type === "message.delta" && f.payload.text === " 50");
      const copy = join(dir, "backup.db");
      const backedUp = await run(process.execPath, [BIN, "backup", copy, "--db", db]);
      expect(backedUp.stderr).toContain(`backed up ${db} to ${copy}`);
      await streaming;

      const b = new Database(copy, { readonly: true });
      expect(b.pragma("integrity_check", { simple: true })).toBe("ok");
      const rows = b.prepare("SELECT id, title FROM sessions").all() as Array<{ id: string; title: string }>;
      expect(rows).toContainEqual({ id, title: "backed up" });
      // One committed state: every stored event's session exists, seqs have no duplicate.
      const events = b.prepare("SELECT seq FROM events WHERE session_id = ? ORDER BY seq").all(id) as Array<{ seq: number }>;
      expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
      expect(events.length).toBeGreaterThan(5);
      b.close();

      // Refusals, by name: an existing file without --force, a PostgreSQL store.
      const again = await run(process.execPath, [BIN, "backup", copy, "--db", db]).catch((e: { code: number; stderr: string }) => e);
      expect(again).toMatchObject({ code: 1 });
      expect((again as { stderr: string }).stderr).toContain("exists");
      const pg = await run(process.execPath, [BIN, "backup", join(dir, "x.db"), "--store", "postgres://u@127.0.0.1:1/db"]).catch((e: { stderr: string }) => e);
      expect((pg as { stderr: string }).stderr).toContain("pg_dump");
      expect(existsSync(join(dir, "x.db"))).toBe(false);
      sock.close();
    } finally {
      await gw.kill("SIGTERM");
    }

    // The copy is a working store: a gateway on it shows the finished turn.
    const restored = await spawnGateway(["--port", "0", "--db", join(dir, "backup.db")]);
    try {
      const sock = await RpcSocket.open(restored.wsUrl);
      const list = await sock.call("session.list", { include_ended: true });
      const s = list.sessions.find((x: { title: string }) => x.title === "backed up");
      expect(s).toBeDefined();
      const page = await sock.call("session.messages", { session_id: s.session_id, limit: 100 });
      expect(page.messages.map((m: { content: string }) => m.content)).toContain(Array.from({ length: 20 }, (_, i) => i + 1).join(" "));
      // The attachment's bytes are in the copied file: the restored gateway serves the same sha256.
      const blob = await fetch(`${restored.url}/api/blobs/${sha256(PNG)}`);
      expect(blob.status).toBe(200);
      expect(blob.headers.get("content-type")).toContain("image/png");
      expect(sha256(Buffer.from(await blob.arrayBuffer()))).toBe(sha256(PNG));
      sock.close();
    } finally {
      await restored.kill("SIGTERM");
    }
  });
});
