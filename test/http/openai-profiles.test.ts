/**
 * The OpenAI-compatible endpoints address a profile with `X-Tether-Profile` (or `?profile=`), as
 * the sessions API does: the session (and a Response's row) lives in that profile's store and runs
 * with its config (here: its system prompt, seen by the fake upstream). Driven by the official
 * `openai` client (`defaultHeaders`) against the real gateway, real SQLite, real sockets.
 */
import OpenAI from "openai";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

const WORK_PROMPT = "You are at work (work).";
let server: TestServer;
let upstream: FakeOpenAI;

beforeAll(async () => {
  upstream = await startFakeOpenAI();
  const dbPath = tempDbPath();
  server = await startTestServer({
    dbPath,
    providerUrl: upstream.url,
    config: { profiles: { work: { db: join(dirname(dbPath), "work.db"), system_prompt: "You are at work ({profile})." } } },
  });
});
afterAll(async () => {
  await server?.close();
  await upstream?.close();
});

function client(profile?: string): OpenAI {
  return new OpenAI({
    baseURL: `${server.url}/v1`,
    apiKey: "unused",
    maxRetries: 0,
    ...(profile ? { defaultHeaders: { "X-Tether-Profile": profile } } : {}),
  });
}

/** The upstream request made by the call `run` (exactly one). */
async function upstreamRequestOf<T>(text: string, run: () => Promise<T>): Promise<{ result: T; body: any }> {
  upstream.script(reply.text([text]));
  const before = upstream.requests.length;
  const result = await run();
  expect(upstream.requests.length).toBe(before + 1);
  return { result, body: upstream.requests[before]!.body };
}

async function summary(sessionId: string, profile?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}/api/sessions/${sessionId}`, { headers: profile ? { "x-tether-profile": profile } : {} });
  return { status: res.status, body: await res.json() };
}

describe("chat completions in a profile", () => {
  it("runs a one-shot completion in the profile named by X-Tether-Profile, with its system prompt", async () => {
    const { result, body } = await upstreamRequestOf("at work", () =>
      client("work").chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }] }).withResponse(),
    );
    expect(result.data.choices[0]!.message.content).toBe("at work");
    expect(body.messages).toEqual([
      { role: "system", content: WORK_PROMPT },
      { role: "user", content: "hi" },
    ]);
    const sessionId = result.response.headers.get("x-session-id")!;
    expect((await summary(sessionId, "work")).body).toMatchObject({ session_id: sessionId, profile: "work" });
    expect((await summary(sessionId)).status).toBe(404); // not in the default profile's store

    // Without the header: the default profile (no system prompt configured).
    const plain = await upstreamRequestOf("at home", () =>
      client().chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }] }).withResponse(),
    );
    expect(plain.body.messages).toEqual([{ role: "user", content: "hi" }]);
    expect((await summary(plain.result.response.headers.get("x-session-id")!)).body.profile).toBe("default");
  });

  it("also takes ?profile= and streams", async () => {
    const { result: stream, body } = await upstreamRequestOf("streamed", async () => {
      const s = await new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 }).chat.completions.create(
        { model: "test-model", messages: [{ role: "user", content: "hi" }], stream: true },
        { query: { profile: "work" } },
      );
      let text = "";
      for await (const chunk of s) text += chunk.choices[0]?.delta.content ?? "";
      return text;
    });
    expect(stream).toBe("streamed");
    expect(body.messages[0]).toEqual({ role: "system", content: WORK_PROMPT });
  });

  it("continues a profile's session with X-Session-Id in that profile only", async () => {
    const created = await fetch(`${server.url}/api/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-tether-profile": "work" },
      body: JSON.stringify({ title: "work chat" }),
    });
    const workSession = ((await created.json()) as { session_id: string }).session_id;

    const { result, body } = await upstreamRequestOf("continued", () =>
      client("work")
        .chat.completions.create(
          { model: "test-model", messages: [{ role: "user", content: "go on" }] },
          { headers: { "X-Session-Id": workSession } },
        )
        .withResponse(),
    );
    expect(result.response.headers.get("x-session-id")).toBe(workSession);
    expect(body.messages[0]).toEqual({ role: "system", content: WORK_PROMPT });
    expect((await summary(workSession, "work")).body.message_count).toBe(2);

    // The session's profile is not the one the request names: 404, as on the sessions API.
    const wrong = await client()
      .chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "x" }] }, { headers: { "X-Session-Id": workSession } })
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.NotFoundError);
    expect(wrong).toMatchObject({ status: 404, code: "session_not_found", param: "X-Session-Id", type: "not_found_error" });
    expect((wrong as Error).message).toContain('profile "default"');

    // And the other way round: a default-profile session addressed in `work`.
    const home = await fetch(`${server.url}/api/sessions`, { method: "POST" });
    const homeSession = ((await home.json()) as { session_id: string }).session_id;
    const crossed = await client("work")
      .chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "x" }] }, { headers: { "X-Session-Id": homeSession } })
      .catch((e: unknown) => e);
    expect(crossed).toMatchObject({ status: 404, code: "session_not_found", param: "X-Session-Id" });
    expect((await summary(homeSession)).body.message_count).toBe(0);
  });
});

describe("responses in a profile", () => {
  it("creates, retrieves, continues and cancels a Response in the named profile only", async () => {
    const work = client("work");
    const { result: first, body } = await upstreamRequestOf("one", () => work.responses.create({ model: "test-model", input: "hi" }));
    expect(first.status).toBe("completed");
    expect(first.output_text).toBe("one");
    expect(body.messages).toEqual([
      { role: "system", content: WORK_PROMPT },
      { role: "user", content: "hi" },
    ]);
    const sessionId = (first as unknown as { session_id: string }).session_id;
    expect((await summary(sessionId, "work")).body).toMatchObject({ profile: "work" });

    expect((await work.responses.retrieve(first.id)).id).toBe(first.id);
    const elsewhere = await client().responses.retrieve(first.id).catch((e: unknown) => e);
    expect(elsewhere).toMatchObject({ status: 404, code: "response_not_found" });
    const byQuery = await fetch(`${server.url}/v1/responses/${first.id}?profile=work`);
    expect(byQuery.status).toBe(200);

    const { result: second, body: secondBody } = await upstreamRequestOf("two", () =>
      work.responses.create({ model: "test-model", input: "more", previous_response_id: first.id }),
    );
    expect((second as unknown as { session_id: string }).session_id).toBe(sessionId);
    expect(secondBody.messages).toEqual([
      { role: "system", content: WORK_PROMPT },
      { role: "user", content: "hi" },
      { role: "assistant", content: "one" },
      { role: "user", content: "more" },
    ]);

    // previous_response_id of another profile: 404 on that param, and no turn runs.
    const before = upstream.requests.length;
    const crossed = await client()
      .responses.create({ model: "test-model", input: "x", previous_response_id: first.id })
      .catch((e: unknown) => e);
    expect(crossed).toMatchObject({ status: 404, code: "response_not_found", param: "previous_response_id" });
    expect((crossed as Error).message).toContain('profile "default"');
    expect(upstream.requests.length).toBe(before);

    const cancelled = await fetch(`${server.url}/v1/responses/${second.id}/cancel`, { method: "POST" });
    expect(cancelled.status).toBe(404);
    const settled = await fetch(`${server.url}/v1/responses/${second.id}/cancel`, { method: "POST", headers: { "x-tether-profile": "work" } });
    expect(settled.status).toBe(200);
    expect(((await settled.json()) as { status: string }).status).toBe("completed");
  });

  it("replays an Idempotency-Key from the profile the response was made in", async () => {
    const key = `idem-${Date.now()}`;
    const { result: first } = await upstreamRequestOf("once", () =>
      client("work").responses.create({ model: "test-model", input: "once" }, { headers: { "Idempotency-Key": key } }),
    );
    expect((await summary((first as unknown as { session_id: string }).session_id, "work")).body.profile).toBe("work");
    const before = upstream.requests.length;
    const again = await client("work").responses.create({ model: "test-model", input: "once" }, { headers: { "Idempotency-Key": key } });
    expect(again.id).toBe(first.id);
    expect(again.output_text).toBe("once");
    const noHeader = await client().responses.create({ model: "test-model", input: "once" }, { headers: { "Idempotency-Key": key } });
    expect(noHeader.id).toBe(first.id);
    expect(upstream.requests.length).toBe(before);
  });
});

describe("unknown profiles and the model list", () => {
  it("answers an unknown profile with 400 invalid_params (param profile) on every endpoint, as the sessions API", async () => {
    const nobody = client("nobody");
    const chat = await nobody.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "x" }] }).catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
    expect(chat).toMatchObject({ status: 400, code: "invalid_params", param: "profile", type: "invalid_request_error" });
    const resp = await nobody.responses.create({ model: "test-model", input: "x" }).catch((e: unknown) => e);
    expect(resp).toMatchObject({ status: 400, code: "invalid_params", param: "profile" });
    expect(await nobody.responses.retrieve("resp_x").catch((e: unknown) => e)).toMatchObject({ status: 400, param: "profile" });
    expect(await nobody.models.list().catch((e: unknown) => e)).toMatchObject({ status: 400, param: "profile" });
    // A known profile lists the same models as the default: profiles share the provider catalog.
    const ids = async (ai: OpenAI) => (await ai.models.list()).data.map((m) => m.id);
    expect(await ids(client("work"))).toEqual(["test-model", "demo"]);
    expect(await ids(client())).toEqual(["test-model", "demo"]);

    const sessionsApi = await fetch(`${server.url}/api/sessions`, { headers: { "x-tether-profile": "nobody" } });
    expect(sessionsApi.status).toBe(400);
    expect(await sessionsApi.json()).toEqual({
      error: {
        message: (chat as { error: { message: string } }).error.message,
        type: "invalid_request_error",
        param: "profile",
        code: "invalid_params",
      },
    });
  });
});
