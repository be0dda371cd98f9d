/**
 * The ACP agent side of `tether acp` (`@agentclientprotocol/sdk`'s `agent()` app): every ACP
 * method is a call of the project's SDK (TetherClient) on a gateway, so an ACP session IS a Tether
 * session — it outlives the editor, lists in `tether sessions`, shows on the web page.
 *
 *   initialize                  loadSession: true; prompts of text, images, resource links and embedded
 *                               resources (promptCapabilities image, embeddedContext: acp-prompt.ts)
 *   session/new { cwd }         session.create (cwd confined to the profile's workspace roots: 4080 otherwise)
 *   session/load { sessionId }  session.resume; the transcript replayed as session/update, then live updates
 *   session/prompt              prompt.submit (text, or parts with attachments); updates stream (acp-updates.ts) until the turn's end:
 *                               end_turn | cancelled (interrupted); a failed turn is an error with
 *                               Tether's { layer, code, retryable } as its data
 *   session/cancel              session.interrupt
 *   session/set_config_option   `model`: config.set model (the gateway's models); a guarded model is refused
 *                               (model_confirmation_required) unless the request's `_meta.confirm` is true
 *   session/set_mode            refused: Tether has no per-session mode to offer (approval policy is the
 *                               profile's config, not the session's; the profile is fixed at creation)
 *   approvals                   session/request_permission → request.respond (once | session | always | deny)
 *   the editor's fs             client tools `editor_read_text_file`, `editor_write_text_file` (when the
 *                               editor offers fs/read_text_file, fs/write_text_file)
 */
import * as acp from "@agentclientprotocol/sdk";
import { ErrorCode, Method, RequestKind, isFrameOf, type Frame, type FrameOf, type OpenRequest, type Snapshot, type TurnErrorInfo, EventType, type ClientToolSpec } from "../../protocol/index.js";
import { RpcError, type TetherClient } from "../../client/index.js";
import { AcpUpdates } from "./acp-updates.js";
import { promptInput } from "./acp-prompt.js";

export interface AcpAgentOptions {
  tether: TetherClient;
  /** The profile sessions are created in and looked up in. */
  profile?: string;
  version: string;
  /** The gateway's HTTP base URL: where a replayed attachment's link points (`/api/blobs/{sha256}`). */
  httpBase?: string;
  /** The gateway's models (`model` config option); empty: only the session's own is offered. */
  models(): Promise<AcpModel[]>;
}

/** A model of the gateway's `GET /v1/models`. */
export interface AcpModel {
  id: string;
  provider: string;
  /** Listed in `models.require_confirmation`: switching to it needs `_meta.confirm`. */
  requires_confirmation?: boolean;
}

interface TurnEnd {
  status: FrameOf<"turn.complete">["payload"]["status"];
  error?: TurnErrorInfo;
}

/** One loaded or created session of this connection. */
class AcpSession {
  readonly updates: AcpUpdates;
  /** Updates go out in order: each waits for the one before. */
  chain: Promise<void> = Promise.resolve();
  unsubscribe: () => void = () => undefined;
  readonly ended = new Map<string, TurnEnd>();
  readonly waiting = new Map<string, (end: TurnEnd) => void>();
  readonly errors = new Map<string, TurnErrorInfo>();
  readonly asking = new Map<string, AbortController>();
  model: string;

  constructor(
    readonly id: string,
    snap: Snapshot,
    httpBase = "",
  ) {
    this.model = snap.model;
    this.updates = new AcpUpdates(httpBase);
  }

  turnEnded(turnId: string): Promise<TurnEnd> {
    const end = this.ended.get(turnId);
    if (end) return Promise.resolve(end);
    return new Promise((resolve) => this.waiting.set(turnId, resolve));
  }
}

/** An attachment the gateway refused (a limit, the model, unreadable bytes): the prompt's params were at fault. */
const ATTACHMENT_REFUSALS: ReadonlySet<number> = new Set([ErrorCode.AttachmentTooLarge, ErrorCode.TooManyAttachments, ErrorCode.AttachmentTypeRefused, ErrorCode.ModelCannotTakePart, ErrorCode.InvalidAttachment, ErrorCode.BlobNotFound]);

const PERMISSION_OPTIONS: acp.PermissionOption[] = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "session", name: "Allow for this session", kind: "allow_always" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "deny", name: "Deny", kind: "reject_once" },
];

export function createAcpAgent(o: AcpAgentOptions): acp.AgentApp {
  const { tether } = o;
  const sessions = new Map<string, AcpSession>();
  let editor: acp.AgentContext | undefined;
  let caps: acp.ClientCapabilities = {};
  const profile = o.profile ? { profile: o.profile } : {};

  const send = (s: AcpSession, updates: acp.SessionUpdate[]) => {
    for (const update of updates) s.chain = s.chain.then(() => editor?.notify(acp.methods.client.session.update, { sessionId: s.id, update })).catch(() => undefined);
  };

  /** Tether errors as ACP errors: unknown (or another principal's) session → resource not found. */
  const acpError = (err: unknown): unknown => {
    if (!(err instanceof RpcError)) return err;
    const data = err.data && typeof err.data === "object" ? err.data : {};
    if (err.code === ErrorCode.NotFound) return new acp.RequestError(-32002, err.message, { code: err.code });
    if (err.code === ErrorCode.InvalidParams || err.code === ErrorCode.CwdOutsideWorkspace || ATTACHMENT_REFUSALS.has(err.code)) return acp.RequestError.invalidParams({ code: err.code, ...data }, err.message);
    return new acp.RequestError(-32603, err.message, { code: err.code, retryable: err.retryable, ...data });
  };
  const tetherCall = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      throw acpError(err);
    }
  };

  const onFrame = (s: AcpSession, f: Frame) => {
    send(s, s.updates.frame(f));
    if (isFrameOf(f, EventType.RequestOpened)) void askPermission(s, f.payload);
    if (isFrameOf(f, EventType.RequestResolved)) s.asking.get(f.payload.request_id)?.abort();
    if (isFrameOf(f, EventType.TurnError) && f.turn_id) s.errors.set(f.turn_id, f.payload.error);
    if (isFrameOf(f, EventType.TurnComplete) && f.turn_id) {
      const end: TurnEnd = { status: f.payload.status, ...(s.errors.has(f.turn_id) ? { error: s.errors.get(f.turn_id)! } : {}) };
      s.ended.set(f.turn_id, end);
      s.waiting.get(f.turn_id)?.(end);
      s.waiting.delete(f.turn_id);
    }
    if (isFrameOf(f, EventType.ModelSwitched)) {
      const model = f.payload.to.model;
      if (model) {
        s.model = model;
        void configOptions(s).then((configOptions) => send(s, [{ sessionUpdate: "config_option_update", configOptions }]));
      }
    }
  };

  /** An approval the turn waits on: the editor asks its user; the answer is the request's. */
  const askPermission = async (s: AcpSession, r: Pick<OpenRequest, "request_id" | "kind" | "call_id" | "tool" | "args">) => {
    if (r.kind !== RequestKind.Approval || s.asking.has(r.request_id) || !editor) return;
    const abort = new AbortController();
    s.asking.set(r.request_id, abort);
    try {
      await s.chain;
      const answer = await editor.request(
        acp.methods.client.session.requestPermission,
        { sessionId: s.id, toolCall: { toolCallId: r.call_id ?? r.request_id, title: r.tool ?? "tool", status: "pending", rawInput: r.args }, options: PERMISSION_OPTIONS },
        { cancellationSignal: abort.signal, stopWaitingOnCancel: true },
      );
      if (abort.signal.aborted) return;
      const choice = answer.outcome.outcome === "selected" ? answer.outcome.optionId : "deny";
      await tether.call(Method.RequestRespond, { session_id: s.id, request_id: r.request_id, choice, ...profile });
    } catch {
      // Answered elsewhere meanwhile, or the editor went away: the request stays for whoever answers.
    } finally {
      s.asking.delete(r.request_id);
    }
  };

  const configOptions = async (s: AcpSession): Promise<acp.SessionConfigOption[]> => {
    const models = await o.models().catch(() => []);
    const options: acp.SessionConfigSelectOption[] = models.length > 0 ? models.map((m) => ({ value: m.id, name: m.id, description: m.requires_confirmation ? `${m.provider} (needs confirmation)` : m.provider })) : [{ value: s.model, name: s.model }];
    if (!options.some((x) => x.value === s.model)) options.unshift({ value: s.model, name: s.model });
    return [{ id: "model", name: "Model", category: "model", type: "select", currentValue: s.model, options }];
  };

  /** The editor's file system as client tools of the session, when it offers it. */
  const editorTools = (): ClientToolSpec[] => {
    const tools: ClientToolSpec[] = [];
    if (caps.fs?.readTextFile) {
      tools.push({ name: "editor_read_text_file", description: "Read a text file as the editor has it (unsaved changes included)", parameters: { type: "object", properties: { path: { type: "string", description: "absolute path" }, line: { type: "integer" }, limit: { type: "integer" } }, required: ["path"] } });
    }
    if (caps.fs?.writeTextFile) {
      tools.push({ name: "editor_write_text_file", description: "Write a text file through the editor", parameters: { type: "object", properties: { path: { type: "string", description: "absolute path" }, content: { type: "string" } }, required: ["path", "content"] } });
    }
    return tools;
  };
  tether.onToolCall("editor_read_text_file", async (args, call) => {
    const a = args as { path: string; line?: number; limit?: number };
    const r = await editor!.request(acp.methods.client.fs.readTextFile, { sessionId: call.sessionId, path: a.path, ...(a.line ? { line: a.line } : {}), ...(a.limit ? { limit: a.limit } : {}) });
    return r.content;
  });
  tether.onToolCall("editor_write_text_file", async (args, call) => {
    const a = args as { path: string; content: string };
    await editor!.request(acp.methods.client.fs.writeTextFile, { sessionId: call.sessionId, path: a.path, content: a.content });
    return `wrote ${a.path}`;
  });

  const attach = (snap: Snapshot): AcpSession => {
    sessions.get(snap.session_id)?.unsubscribe();
    const s = new AcpSession(snap.session_id, snap, o.httpBase);
    sessions.set(s.id, s);
    s.unsubscribe = tether.subscribe(s.id, (f) => onFrame(s, f), { afterSeq: snap.latest_seq, onSnapshot: (snapshot) => send(s, s.updates.snapshot(snapshot)) });
    return s;
  };

  const sessionOf = (id: string): AcpSession => {
    const s = sessions.get(id);
    if (!s) throw new acp.RequestError(-32002, `Session ${id} is not loaded on this connection: session/load it first`, { sessionId: id });
    return s;
  };

  return acp
    .agent({ name: "tether" })
    .onConnect((conn) => {
      editor = conn.client;
      conn.closed.then(() => {
        for (const s of sessions.values()) s.unsubscribe();
      }, () => undefined);
    })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      caps = params.clientCapabilities ?? {};
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: true, promptCapabilities: { image: true, audio: false, embeddedContext: true } },
        authMethods: [],
        agentInfo: { name: "tether", title: "Tether", version: o.version },
      };
    })
    .onRequest(acp.methods.agent.session.new, async ({ params }) => {
      refuseMcpServers(params.mcpServers);
      const tools = editorTools();
      const snap = await tetherCall(() => tether.createSession({ cwd: params.cwd, ...profile, ...(tools.length > 0 ? { client_tools: tools } : {}) }));
      const s = attach(snap);
      return { sessionId: s.id, configOptions: await configOptions(s) };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params }) => {
      refuseMcpServers(params.mcpServers);
      // A profile is named on every call (the SDK's resumeSession names none: the default's).
      const snap = await tetherCall(() => (o.profile ? tether.call(Method.SessionResume, { session_id: params.sessionId, ...profile }) : tether.resumeSession(params.sessionId)));
      const tools = editorTools();
      if (tools.length > 0) await tetherCall(() => tether.call(Method.SessionUpdate, { session_id: snap.session_id, client_tools: tools, ...profile }));
      const s = attach(snap);
      send(s, s.updates.transcript(snap.messages, snap.todo));
      await s.chain;
      for (const r of snap.open_requests) void askPermission(s, r);
      return { configOptions: await configOptions(s) };
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params }) => {
      const s = sessionOf(params.sessionId);
      const { text, parts } = promptInput(params.prompt);
      s.updates.ownPrompt(text);
      const submitted = await tetherCall(() => tether.call(Method.PromptSubmit, { session_id: s.id, ...(parts ? { parts } : { text }), ...profile }));
      const end = await s.turnEnded(submitted.turn_id);
      await s.chain;
      if (end.status === "error") {
        const e = end.error;
        throw new acp.RequestError(-32603, e?.message ?? "the turn failed", { layer: e?.layer, code: e?.code, retryable: e?.retryable });
      }
      return { stopReason: end.status === "complete" ? "end_turn" : "cancelled" };
    })
    .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) return;
      for (const a of s.asking.values()) a.abort();
      await tether.call(Method.SessionInterrupt, { session_id: s.id, ...profile }).catch(() => undefined);
    })
    .onRequest(acp.methods.agent.session.setConfigOption, async ({ params }) => {
      const s = sessionOf(params.sessionId);
      if (params.configId !== "model") throw acp.RequestError.invalidParams({ configId: params.configId }, `No config option ${params.configId}: this agent has "model"`);
      const value = String(params.value);
      const model = (await o.models().catch(() => [])).find((m) => m.id === value);
      if (!model) throw acp.RequestError.invalidParams({ value }, `No model ${value} on this gateway`);
      // A guarded model is the gateway's to guard: confirmed only when the editor says so.
      const confirm = params._meta?.confirm === true;
      const result = await tetherCall(() => tether.call(Method.ConfigSet, { session_id: s.id, key: "model", value: { provider: model.provider, model: model.id }, ...(confirm ? { confirm: true } : {}), ...profile }));
      if (result.status === "confirm_required") {
        const message = result.confirm_message ?? `Switching to ${model.id} needs confirmation.`;
        throw acp.RequestError.invalidParams({ code: "model_confirmation_required", model: model.id, confirm_message: message }, `${message} (model ${model.id}: send session/set_config_option again with _meta: { confirm: true })`);
      }
      // applied now, or pending: the session's next turn runs on it.
      s.model = model.id;
      return { configOptions: await configOptions(s) };
    })
    .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
      throw acp.RequestError.invalidParams({ modeId: params.modeId }, "This agent has no session modes (it offers none in session/new; approval policy is the profile's config): choose the model with session/set_config_option");
    });
}

/** The editor's MCP servers are not run by the gateway (its own are configured there): refused, not dropped. */
function refuseMcpServers(servers: readonly unknown[] | undefined): void {
  if (servers && servers.length > 0) {
    throw acp.RequestError.invalidParams({ mcpServers: servers.length }, "mcpServers: this agent uses the MCP servers configured on the gateway (mcp_servers); pass none");
  }
}
