/**
 * Attachments through the sessions API and the WebSocket protocol, against the real gateway: a
 * 1×1 PNG and a small PDF reach a scripted OpenAI-compatible upstream as chat parts unchanged in
 * meaning, the transcript holds them by sha256 after a restart, `GET /api/blobs/{sha256}` serves
 * them to the owner only, and every limit refuses with a 4xx naming it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { openSse } from "../support/sse-client.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { tempDbPath } from "../support/temp-db.js";
import { PDF, PDF_B64, PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";

let server: TestServer | undefined;
let ai: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await ai?.close();
  server = undefined;
  ai = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };
const VISION = { models: { modalities: { "test-model": ["text", "image", "file"] as ("text" | "image" | "file")[] } } };

async function call(method: string, path: string, body?: unknown, key = "alice-key") {
  const res = await fetch(`${server!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(buf.toString());
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, body: json, bytes: buf };
}

const parts = [
  { type: "text", text: "What is in these?" },
  { type: "image", data: PNG_B64 },
  { type: "file", media_type: "application/pdf", filename: "report.pdf", data: PDF_B64 },
];

async function promptAndWait(id: string, body: unknown): Promise<void> {
  const sse = await openSse(`${server!.url}/api/sessions/${id}/events`, { headers: { authorization: "Bearer alice-key" } });
  const prompt = await call("POST", `/api/sessions/${id}/prompt`, body);
  expect(prompt.status, JSON.stringify(prompt.body)).toBe(202);
  await sse.waitFor((evs) => evs.some((e) => e.event === "turn.complete"));
  sse.close();
}

describe("attachments: POST /api/sessions/{id}/prompt", () => {
  it("forwards a PNG and a PDF as chat parts, keeps them by sha256 across a restart, serves them to the owner only", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["A dot and a report."]));
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config: { auth: { keys: KEYS }, ...VISION } });
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    await promptAndWait(id, { parts });

    const sent = ai.requests[0]!.body.messages as Array<{ role: string; content: unknown }>;
    expect(sent[sent.length - 1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in these?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
        { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` } },
      ],
    });

    const expectedParts = [
      { type: "text", text: "What is in these?" },
      { type: "image", media_type: "image/png", sha256: sha256(PNG), size: PNG.length, width: 1, height: 1 },
      { type: "file", media_type: "application/pdf", filename: "report.pdf", sha256: sha256(PDF), size: PDF.length },
    ];
    const check = async () => {
      const messages = (await call("GET", `/api/sessions/${id}/messages`)).body.messages;
      expect(messages[0]).toMatchObject({ role: "user", content: "What is in these?", parts: expectedParts });
      const png = await call("GET", `/api/blobs/${sha256(PNG)}`);
      expect(png.status).toBe(200);
      expect(png.headers.get("content-type")).toBe("image/png");
      expect(png.headers.get("x-content-type-options")).toBe("nosniff");
      expect(png.bytes.equals(PNG)).toBe(true);
      const pdf = await call("GET", `/api/blobs/${sha256(PDF)}`);
      expect(pdf.headers.get("content-type")).toBe("application/pdf");
      expect(pdf.headers.get("content-disposition")).toBe("attachment");
      expect(pdf.bytes.equals(PDF)).toBe(true);
      // Another principal and an unknown hash answer the same.
      const other = await call("GET", `/api/blobs/${sha256(PNG)}`, undefined, "bob-key");
      const unknown = await call("GET", `/api/blobs/${"0".repeat(64)}`);
      expect(other.status).toBe(404);
      expect(unknown.status).toBe(404);
      expect(other.body).toEqual(unknown.body);
      expect(other.body.error.code).toBe("blob_not_found");
    };
    await check();
    await server.close();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config: { auth: { keys: KEYS }, ...VISION } });
    await check();

    // The snapshot (a resume) carries references, never bytes.
    const sock = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const snap = await sock.call("session.resume", { session_id: id });
    expect(snap.messages[0].parts).toEqual(expectedParts);
    expect(JSON.stringify(snap)).not.toContain(PNG_B64);
    sock.close();
  });

  it("refuses, naming the limit or the model: a model without vision, too big, too many, a type not allowed, a non-https URL", async () => {
    ai = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: ai.url, config: { auth: { keys: KEYS }, attachments: { max_bytes: 100, max_per_message: 2, types: ["image/*"] } } });
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    const blind = await call("POST", `/api/sessions/${id}/prompt`, { parts: [{ type: "image", data: PNG_B64 }] });
    expect(blind.status).toBe(400);
    expect(blind.body.error.code).toBe("model_cannot_take_part");
    expect(blind.body.error.message).toContain("parts.0");
    expect(blind.body.error.message).toContain("test-model");
    expect(ai.requests).toHaveLength(0);
  });

  it("applies attachments limits with their names", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS }, attachments: { max_bytes: 100, max_per_message: 2, types: ["image/*"] } } });
    const id = (await call("POST", "/api/sessions", {})).body.session_id;
    const post = (p: unknown[]) => call("POST", `/api/sessions/${id}/prompt`, { parts: p });
    const big = await post([{ type: "image", data: Buffer.alloc(101, 1).toString("base64"), media_type: "image/png" }]);
    expect([big.status, big.body.error.code]).toEqual([413, "attachment_too_large"]);
    expect(big.body.error.message).toContain("attachments.max_bytes");
    const many = await post([1, 2, 3].map(() => ({ type: "image", data: PNG_B64 })));
    expect([many.status, many.body.error.code]).toEqual([400, "too_many_attachments"]);
    expect(many.body.error.message).toContain("attachments.max_per_message");
    const pdf = await post([{ type: "file", media_type: "application/pdf", filename: "r.pdf", data: Buffer.alloc(10).toString("base64") }]);
    expect([pdf.status, pdf.body.error.code]).toEqual([415, "attachment_type_refused"]);
    expect(pdf.body.error.message).toContain("attachments.types");
    const http = await post([{ type: "image", url: "http://169.254.169.254/x.png" }]);
    expect([http.status, http.body.error.code]).toEqual([400, "invalid_attachment"]);
    const notB64 = await post([{ type: "image", data: "!!!" }]);
    expect([notB64.status, notB64.body.error.code]).toEqual([400, "invalid_attachment"]);
  });
});

describe("attachments: WebSocket prompt.submit { parts }", () => {
  it("forwards a PNG and a PDF to the upstream as chat parts, keeps them by sha256 across a restart, serves them to the owner only", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["A dot and a report."]));
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config: { auth: { keys: KEYS }, ...VISION } });
    const sock = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const id = (await sock.call("session.create", {})).session_id;
    await sock.call("prompt.submit", { session_id: id, parts });
    await sock.waitForEvent(id, (f) => f.type === "turn.complete");
    sock.close();
    const sent = ai.requests[0]!.body.messages as Array<{ role: string; content: unknown }>;
    expect(sent.at(-1)!.content).toEqual([
      { type: "text", text: "What is in these?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
      { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${PDF_B64}` } },
    ]);
    await server.close();
    server = await startTestServer({ dbPath, providerUrl: ai.url, config: { auth: { keys: KEYS }, ...VISION } });
    const after = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const snap = await after.call("session.resume", { session_id: id });
    expect(snap.messages[0].parts.map((p: { sha256?: string }) => p.sha256)).toEqual([undefined, sha256(PNG), sha256(PDF)]);
    after.close();
    for (const bytes of [PNG, PDF]) {
      const mine = await call("GET", `/api/blobs/${sha256(bytes)}`);
      expect([mine.status, mine.bytes.equals(bytes)]).toEqual([200, true]);
      expect((await call("GET", `/api/blobs/${sha256(bytes)}`, undefined, "bob-key")).status).toBe(404);
    }
  });
});

describe("attachments: WebSocket prompt.submit { parts } and the demo provider", () => {
  it("the demo provider says exactly what it received; an https image URL is kept as a URL", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const sock = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const snap = await sock.call("session.create", {});
    const id = snap.session_id;
    await sock.call("prompt.submit", { session_id: id, parts });
    const done = await sock.waitForEvent(id, (f) => f.type === "message.complete" && f.payload.role === "assistant");
    expect(done.payload.content.startsWith(`attachments: image/png 1\u00d71 70 B sha256:${sha256(PNG).slice(0, 12)}; file report.pdf application/pdf ${PDF.length} B sha256:${sha256(PDF).slice(0, 12)}. You said: "What is in these?"`)).toBe(true);
    const user = sock.sessionEvents(id).find((f) => f.type === "message.complete" && f.payload.role === "user")!;
    expect(user.payload.parts[1]).toMatchObject({ type: "image", sha256: sha256(PNG) });

    await sock.call("prompt.submit", { session_id: id, text: "look", parts: [{ type: "image", url: "https://example.com/cat.png" }] });
    await sock.waitFor(() => sock.sessionEvents(id).filter((f) => f.type === "message.complete" && f.payload.role === "assistant").length === 2);
    const second = sock.sessionEvents(id).filter((f) => f.type === "message.complete" && f.payload.role === "assistant")[1]!;
    expect(second.payload.content.startsWith("attachments: image/* https://example.com/cat.png. You said: \"look\"")).toBe(true);
    // A blob of another's session cannot be borrowed by its hash.
    const bob = await RpcSocket.open(server.wsUrl, { authorization: "Bearer bob-key" });
    const bobSession = (await bob.call("session.create", {})).session_id;
    const borrowed = await bob.request("prompt.submit", { session_id: bobSession, parts: [{ type: "image", sha256: sha256(PNG) }] });
    expect(borrowed.error).toMatchObject({ code: 4114 });
    // Its owner can reuse it by hash.
    await sock.call("prompt.submit", { session_id: id, parts: [{ type: "image", sha256: sha256(PNG) }] });
    sock.close();
    bob.close();
  });
});
