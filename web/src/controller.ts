/**
 * The page's state and every action, on top of the SDK (`src/client`): one TetherClient per tab,
 * one subscription (the open session), the sessions list, the model list. Views read the
 * controller and call its methods; `subscribe` tells them when to re-render.
 */
import {
  ErrorCode,
  Method,
  RpcError,
  TetherClient,
  type ClientStatus,
  type Frame,
  type SessionSummary,
  type Snapshot,
} from "../../src/client/index.js";
import { isRecoverableEnd } from "../../src/protocol/end-reasons.js";
import { BROWSER_TOOLS, installBrowserTools } from "./browser-tools.js";
import {
  applyFrame,
  applyMessageSnapshot,
  applyTodo,
  fromSnapshot,
  settlePending,
  type SessionModel,
} from "./model.js";

export const TOKEN_KEY = "tether.apiKey";
/** What an older page kept per session in this browser (versions, stop causes): the gateway keeps both now; dropped. */
const PAGE_KEY = (sessionId: string) => `tether.page.${sessionId}`;
/** A running turn silent this long while "connected": probe the socket (a stalled stream). */
const STALL_MS = 4000;
/** A probe unanswered this long: say so at once (the SDK drops the socket when it times out). */
const STALL_SHOW_MS = 1000;

export interface ModelOption {
  id: string;
  provider: string;
  /** Where a session on it compresses (GET /v1/models `compress_at_tokens`), when finite. */
  compressAt?: number;
}

const PROMPT_KEY = "tether.systemPrompt";

export interface Toast {
  id: number;
  text: string;
  tone: "info" | "ok" | "warn" | "error";
}

export interface ConfirmRequest {
  model: string;
  message: string;
}

type Listener = () => void;

function newRequestId(): string {
  const c = globalThis.crypto;
  return typeof c?.randomUUID === "function" ? c.randomUUID() : `req-${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

function errorText(err: unknown): string {
  if (err instanceof RpcError) return `${err.message} (${err.code})`;
  return err instanceof Error ? err.message : String(err);
}

export class AppController {
  token: string | null;
  needsKey = false;
  keyError: string | undefined;
  status: ClientStatus = { state: "connecting", attempt: 0 };
  /** The gateway restarted while this page was open (shown once, then cleared). */
  sessions: SessionSummary[] = [];
  /** The list's search text (titles and contents, server-side) and which list: open or archived. */
  searchQuery = "";
  showArchived = false;
  private listSeq = 0;
  models: ModelOption[] = [];
  /** Models that ask for confirmation before a switch (`requires_confirmation` on /v1/models, or a confirm_required seen). */
  guarded = new Set<string>();
  current: SessionModel | undefined;
  currentId: string | undefined;
  loading = false;
  sessionError: string | undefined;
  confirm: ConfirmRequest | undefined;
  toasts: Toast[] = [];
  /** What the composer should show next (an edited queued prompt): `seq` tells a new one. */
  composerDraft = { text: "", seq: 0 };
  /** What the page's live region says: a reply that finished (never each word as it streams). */
  announcement = "";
  /** The model a draft's session is created on (picked in the draft's model menu; absent: the profile's). */
  draftModel: string | undefined;
  /** The draft's first prompt while its session is being created (`startSession`). */
  starting: string | undefined;
  /** The system prompt new sessions start with ("" = the profile's). */
  newSessionPrompt = "";
  /** The browser said `offline` (cleared by `online` or a new connection). */
  offline = false;
  /** A running turn went silent and a probe of the socket is unanswered. */
  stalled = false;
  private lastFrameAt = Date.now();
  private probing = false;
  private stallTimer: ReturnType<typeof setInterval> | undefined;
  private client: TetherClient | undefined;
  /** The tab's SDK client, for panels that make their own calls (processes.tsx). */
  get sdk(): TetherClient | undefined {
    return this.client;
  }
  private unsubscribe: (() => void) | undefined;
  private listeners = new Set<Listener>();
  private scheduled = false;
  private toastSeq = 0;
  private listTimer: ReturnType<typeof setInterval> | undefined;
  private openSeq = 0;

  constructor(private readonly storage: Storage, private readonly location: Location) {
    this.token = storage.getItem(TOKEN_KEY);
    this.offline = typeof navigator !== "undefined" && navigator.onLine === false;
    this.newSessionPrompt = storage.getItem(PROMPT_KEY) ?? "";
  }

  setNewSessionPrompt(text: string): void {
    this.newSessionPrompt = text.trim();
    if (this.newSessionPrompt) this.storage.setItem(PROMPT_KEY, this.newSessionPrompt);
    else this.storage.removeItem(PROMPT_KEY);
    this.changed();
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Coalesces bursts of frames into one render per animation frame. */
  private changed(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      for (const l of [...this.listeners]) l();
    };
    if (typeof requestAnimationFrame === "function" && document.visibilityState === "visible") requestAnimationFrame(run);
    else setTimeout(run, 16);
  }

  /** One toast at a time (the newest), shown in the page's flow above the composer, never over it. */
  toast(text: string, tone: Toast["tone"] = "info", ms = 4000): void {
    const id = ++this.toastSeq;
    this.toasts = [{ id, text, tone }];
    this.changed();
    setTimeout(() => {
      this.toasts = this.toasts.filter((t) => t.id !== id);
      this.changed();
    }, ms);
  }

  /** The gateway cannot be reached right now: what streams is paused, Stop cannot act. */
  get linkDown(): boolean {
    return this.offline || this.stalled || this.status.state !== "connected";
  }

  /** The browser's `offline` event: shown at once, and the socket is probed. */
  goOffline(): void {
    this.offline = true;
    this.changed();
    this.wake();
  }

  goOnline(): void {
    this.offline = false;
    this.changed();
    this.wake();
  }

  /** A running turn silent for STALL_MS: probe; if the probe hangs, the page says so at once. */
  private checkStall(): void {
    const m = this.current;
    const client = this.client;
    if (!m?.running || !client || this.probing || this.status.state !== "connected" || m.requests.length > 0) return;
    if (Date.now() - this.lastFrameAt < STALL_MS) return;
    this.probing = true;
    const shown = setTimeout(() => {
      this.stalled = true;
      this.changed();
    }, STALL_SHOW_MS);
    void client.wake().finally(() => {
      clearTimeout(shown);
      this.probing = false;
      this.stalled = false;
      this.lastFrameAt = Date.now();
      this.changed();
    });
  }

  /** An older page's per-session state in this browser: the gateway keeps versions and stop reasons now. */
  private forgetPageState(sessionId: string): void {
    try {
      this.storage.removeItem(PAGE_KEY(sessionId));
    } catch {
      // storage blocked: nothing to forget
    }
  }

  private authHeaders(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  /** Checks the key over HTTP (a browser learns nothing from a refused WebSocket), then connects. */
  async start(): Promise<void> {
    let res: Response;
    try {
      res = await fetch("/v1/models", { headers: this.authHeaders() });
    } catch (err) {
      this.status = { state: "reconnecting", attempt: 1, delayMs: 2000, reason: errorText(err) };
      this.changed();
      setTimeout(() => void this.start(), 2000);
      return;
    }
    if (res.status === 401) {
      this.needsKey = true;
      this.keyError = this.token ? "That API key was refused." : undefined;
      this.status = { state: "closed" };
      this.changed();
      return;
    }
    this.needsKey = false;
    if (res.ok) {
      const body = (await res.json()) as { data?: Array<{ id: string; owned_by: string; requires_confirmation?: boolean; compress_at_tokens?: number }> };
      this.models = (body.data ?? []).map((m) => ({ id: m.id, provider: m.owned_by, ...(m.compress_at_tokens ? { compressAt: m.compress_at_tokens } : {}) }));
      this.guarded = new Set((body.data ?? []).filter((m) => m.requires_confirmation).map((m) => m.id));
    }
    await this.connect();
  }

  async setToken(token: string): Promise<void> {
    this.token = token.trim() || null;
    if (this.token) this.storage.setItem(TOKEN_KEY, this.token);
    else this.storage.removeItem(TOKEN_KEY);
    await this.start();
  }

  forgetToken(): void {
    this.storage.removeItem(TOKEN_KEY);
    this.token = null;
    void this.client?.close();
    this.client = undefined;
    this.needsKey = true;
    this.changed();
  }

  private async connect(): Promise<void> {
    const proto = this.location.protocol === "https:" ? "wss:" : "ws:";
    const client = new TetherClient({
      url: `${proto}//${this.location.host}/ws`,
      ...(this.token ? { token: this.token } : {}),
      backoff: { initialMs: 250, maxMs: 5000 },
      // A page notices a dead link within seconds, not the SDK's default ~20 s.
      pingIntervalMs: 5000,
      pingTimeoutMs: 4000,
      wakeProbeMs: 2500,
      onHandlerError: (err) => console.error("tether web: handler failed", err),
    });
    this.client = client;
    installBrowserTools(client);
    client.onStatus((s) => {
      this.status = s;
      if (s.state === "connected") {
        this.lastFrameAt = Date.now();
        if (s.reconnected) this.offline = false;
      }
      if (s.state === "connected" && s.reconnected) {
        if (s.restarted) this.toast("Gateway restarted — transcript recovered", "ok");
        void this.refreshSessions();
      }
      this.changed();
    });
    this.stallTimer ??= setInterval(() => this.checkStall(), 1000);
    client.onGlobal((f) => {
      if (f.type === "session.reclaimed") void this.refreshSessions();
    });
    for (;;) {
      try {
        await client.connect();
        break;
      } catch (err) {
        this.status = { state: "reconnecting", attempt: 1, delayMs: 1000, reason: errorText(err) };
        this.changed();
        await new Promise((r) => setTimeout(r, 1000));
        if (this.client !== client) return;
      }
    }
    await this.refreshSessions();
    this.listTimer ??= setInterval(() => void this.refreshSessions(), 10_000);
    const wanted = this.sessionFromHash();
    // Without a session in the URL the page opens on a new session's composer (a draft).
    if (wanted) await this.openSession(wanted);
    this.changed();
  }

  /** Called when the tab becomes visible or the network comes back: probe the socket. */
  wake(): void {
    void this.client?.wake();
  }

  sessionFromHash(): string | undefined {
    const m = /^#\/s\/([^/?#]+)/.exec(this.location.hash);
    return m ? decodeURIComponent(m[1]!) : undefined;
  }

  navigate(sessionId: string): void {
    const hash = `#/s/${encodeURIComponent(sessionId)}`;
    if (this.location.hash === hash) void this.openSession(sessionId);
    else this.location.hash = hash;
  }

  async refreshSessions(): Promise<void> {
    const client = this.client;
    if (!client?.connected) return;
    const seq = ++this.listSeq;
    try {
      const q = this.searchQuery.trim();
      const res = await client.call(Method.SessionList, { include_ended: true, limit: 100, archived: this.showArchived, ...(q ? { query: q.slice(0, 200) } : {}) });
      if (seq !== this.listSeq) return; // a newer search answered first
      this.sessions = res.sessions;
      this.changed();
    } catch {
      // the next refresh (or reconnect) tries again
    }
  }

  private requireClient(): TetherClient {
    if (!this.client) throw new Error("not connected");
    return this.client;
  }

  /** Subscribes first, then resumes: frames sent between the snapshot and the answer are kept. */
  async openSession(sessionId: string): Promise<void> {
    const client = this.requireClient();
    const seq = ++this.openSeq;
    const previous = this.currentId;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (previous && previous !== sessionId) void client.call(Method.SessionDetach, { session_id: previous }).catch(() => undefined);
    this.currentId = sessionId;
    if (this.current?.sessionId !== sessionId) this.current = undefined;
    this.loading = true;
    this.sessionError = undefined;
    this.changed();

    let model: SessionModel | undefined;
    let early: Frame[] = [];
    const off = client.subscribe(
      sessionId,
      (frame) => {
        this.lastFrameAt = Date.now();
        if (!model) early.push(frame);
        else if (applyFrame(model, frame)) this.onModelFrame(model, frame);
      },
      {
        onSnapshot: (snap) => {
          if (model) {
            applyMessageSnapshot(model, snap);
            this.changed();
          }
        },
        onDropped: (err) => this.onSessionLost(sessionId, err),
        onSuspended: () => {
          if (this.currentId === sessionId) void this.openSession(sessionId);
        },
        onGap: () => {
          if (this.currentId === sessionId) void this.openSession(sessionId);
        },
      },
    );
    this.unsubscribe = off;
    try {
      const snap = await client.resumeSession(sessionId);
      if (seq !== this.openSeq) return;
      model = fromSnapshot(snap, this.current);
      this.forgetPageState(snap.session_id);
      for (const f of early) if ((f.seq ?? 0) > snap.latest_seq) applyFrame(model, f);
      early = [];
      this.current = model;
      this.currentId = snap.session_id;
      if (snap.resolved_from) this.navigate(snap.session_id);
    } catch (err) {
      if (seq !== this.openSeq) return;
      off();
      this.unsubscribe = undefined;
      await this.showEnded(sessionId, err);
    } finally {
      if (seq === this.openSeq) {
        this.loading = false;
        this.changed();
      }
    }
    void this.refreshSessions();
  }

  /** A session that cannot be resumed (closed by a user): its transcript, read-only, with Reopen. */
  private async showEnded(sessionId: string, err: unknown): Promise<void> {
    const client = this.requireClient();
    if (err instanceof RpcError && err.code === ErrorCode.Closed) {
      const summary = this.sessions.find((s) => s.session_id === sessionId);
      let messages: Snapshot["messages"] = [];
      try {
        messages = (await client.call(Method.SessionMessages, { session_id: sessionId, limit: 1000 })).messages;
      } catch {
        // the transcript may be unreadable for a closed session; the Reopen button still works
      }
      let delegations: Snapshot["delegations"] = [];
      try {
        delegations = (await client.call(Method.DelegationList, { session_id: sessionId })).delegations;
      } catch {
        // no delegation cards then; delivered results still show as result cards
      }
      const endReason = (err.data as { end_reason?: string } | undefined)?.end_reason ?? summary?.end_reason ?? "user_close";
      const snap: Snapshot = {
        session_id: sessionId,
        title: summary?.title ?? "",
        profile: summary?.profile ?? "default",
        model: summary?.model ?? "",
        provider: "",
        open_requests: [],
        state: "ended",
        running: false,
        latest_seq: 0,
        epoch: "",
        messages,
        todo: { revision: 0, items: [] },
        delegations,
      };
      this.current = fromSnapshot(snap, undefined);
      this.current.endReason = endReason;
      return;
    }
    this.current = undefined;
    this.sessionError =
      err instanceof RpcError && err.code === ErrorCode.NotFound ? "This session does not exist (or belongs to someone else)." : errorText(err);
  }

  private onSessionLost(sessionId: string, err: Error): void {
    if (this.currentId !== sessionId) return;
    if (err instanceof RpcError && err.code === ErrorCode.Closed && this.current) {
      this.current.state = "ended";
      this.current.running = false;
      this.current.version++;
    }
    void this.refreshSessions();
    this.changed();
  }

  private onModelFrame(model: SessionModel, frame: Frame): void {
    if (model !== this.current) return;
    if (frame.type === "message.complete") {
      const c = frame.payload as { role?: string; status?: string; content?: string };
      // A count, not the text: the reply is right there in the transcript to read (and no text is shown twice).
      if (c.role === "assistant" && c.status === "complete" && c.content) {
        const words = c.content.trim().split(/\s+/).length;
        this.announcement = `Reply finished (${words} ${words === 1 ? "word" : "words"})`;
      }
    }
    if (frame.type === "turn.complete" || frame.type === "session.info" || frame.type === "session.closed" || frame.type === "model.switched") {
      void this.refreshSessions();
    }
    this.changed();
  }

  /**
   * A new session is a draft until its first prompt (`startSession`): the page shows an empty
   * composer and nothing is created on the gateway, so no empty "Untitled session" rows pile up.
   */
  newSession(): void {
    const client = this.client;
    const previous = this.currentId;
    this.openSeq++;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    if (client && previous) void client.call(Method.SessionDetach, { session_id: previous }).catch(() => undefined);
    this.current = undefined;
    this.currentId = undefined;
    this.loading = false;
    this.sessionError = undefined;
    if (this.location.hash) this.location.hash = "";
    this.changed();
  }

  /** The draft's first prompt: creates the session, opens it, then sends `text` (the draft shows it meanwhile). */
  async startSession(text: string): Promise<boolean> {
    const client = this.client;
    if (!client || this.starting !== undefined || !text.trim()) return false;
    this.starting = text;
    this.changed();
    try {
      const snap = await client.createSession({
        client_tools: BROWSER_TOOLS,
        ...(this.newSessionPrompt ? { system_prompt: this.newSessionPrompt } : {}),
        ...(this.draftModel ? { model: this.draftModel } : {}),
      });
      // currentId first: the hash change that follows finds the session already open.
      this.currentId = snap.session_id;
      this.location.hash = `#/s/${encodeURIComponent(snap.session_id)}`;
      await this.openSession(snap.session_id);
      return await this.submit(text);
    } catch (err) {
      this.toast(`Could not create a session: ${errorText(err)}`, "error");
      this.composerDraft = { text, seq: this.composerDraft.seq + 1 };
      return false;
    } finally {
      this.starting = undefined;
      this.changed();
    }
  }

  /**
   * Runs the exchange of user message `userKey` again, as a new version of it (the gateway's
   * branching: `prompt.submit { from_message_id }`) — with `text`, an edit; without, the same prompt.
   * The old branch stays a previous version; any exchange of the transcript, not only the newest.
   */
  async regenerate(userKey: string, text?: string): Promise<boolean> {
    const user = this.current?.blocks.find((b) => b.key === userKey && b.kind === "user");
    if (!user || user.kind !== "user") return false;
    return this.submit(text ?? user.text, { replaces: userKey, ...(text === undefined ? { sameText: true } : {}) });
  }

  /** "‹ / ›": shows another version of a prompt (`session.branch.select`), a change every viewer sees. */
  async selectVersion(messageId: string): Promise<void> {
    const model = this.current;
    if (!model || !this.client) return;
    try {
      await this.client.selectVersion(model.sessionId, messageId);
    } catch (err) {
      this.toast(`Could not switch versions: ${errorText(err)}`, "error");
    }
  }

  /** The open session's own system prompt (`session.update`): from its next turn on; "" = the profile's. */
  async setSessionPrompt(text: string): Promise<boolean> {
    const model = this.current;
    if (!model || !this.client) return false;
    try {
      await this.client.call(Method.SessionUpdate, { session_id: model.sessionId, system_prompt: text.trim() });
      if (text.trim()) model.systemPrompt = text.trim();
      else delete model.systemPrompt;
      model.version++;
      this.toast(text.trim() ? "System prompt saved: used from the next reply" : "System prompt cleared: the profile's applies", "ok");
      this.changed();
      return true;
    } catch (err) {
      this.toast(`Could not save the system prompt: ${errorText(err)}`, "error");
      return false;
    }
  }

  async submit(text: string, opts: { replaces?: string; sameText?: boolean } = {}): Promise<boolean> {
    const model = this.current;
    const client = this.client;
    if (!model || !client || !text.trim()) return false;
    if (model.state === "ended") {
      this.toast("This session has ended: reopen it first", "warn");
      return false;
    }
    const requestId = newRequestId();
    // An untitled session is named after its first prompt (renamable from the sidebar).
    if (!model.title && !model.blocks.some((b) => b.kind === "user") && model.pending.length === 0) {
      const title = text.replace(/\s+/g, " ").trim().slice(0, 60);
      model.title = title;
      void client.call(Method.SessionUpdate, { session_id: model.sessionId, title }).then(() => this.refreshSessions(), () => undefined);
    }
    model.pending = [...model.pending, { requestId, text, status: "sending", ...(opts.replaces ? { replaces: opts.replaces } : {}) }];
    model.version++;
    this.changed();
    // The same request_id on every retry: a prompt sent twice never runs twice.
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        const branch = opts.replaces ? { from_message_id: opts.replaces, ...(opts.sameText ? {} : { text }) } : { text };
        const res = await client.call(Method.PromptSubmit, { session_id: model.sessionId, request_id: requestId, ...branch }, { timeoutMs: 15_000 });
        settlePending(model, requestId, res);
        this.changed();
        return true;
      } catch (err) {
        const transient = !(err instanceof RpcError) || err.retryable || err.code === ErrorCode.NotLive;
        if (!transient || attempt === 19) {
          model.pending = model.pending.map((q) => (q.requestId === requestId ? { ...q, status: "failed", error: errorText(err) } : q));
          model.version++;
          this.changed();
          return false;
        }
        if (err instanceof RpcError && err.code === ErrorCode.NotLive) await this.openSession(model.sessionId).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    return false;
  }

  /** Cancels a queued prompt (`prompt.cancel`): it never runs. Returns its text. */
  async cancelPending(requestId: string): Promise<string | undefined> {
    const model = this.current;
    const q = model?.pending.find((x) => x.requestId === requestId);
    if (!model || !q || !this.client) return undefined;
    if (q.turnId) {
      try {
        const res = await this.client.call(Method.PromptCancel, { session_id: model.sessionId, turn_id: q.turnId });
        if (res.status === "interrupted") this.toast("It had started: stopped", "info");
      } catch (err) {
        this.toast(`Cancel failed: ${errorText(err)}`, "error");
        return undefined;
      }
    }
    this.dismissPending(requestId);
    return q.text;
  }

  /** Cancels a queued prompt and puts its text back in the composer, to edit and send again. */
  async editPending(requestId: string): Promise<void> {
    const text = await this.cancelPending(requestId);
    if (text === undefined) return;
    this.composerDraft = { text, seq: this.composerDraft.seq + 1 };
    this.changed();
  }

  dismissPending(requestId: string): void {
    const model = this.current;
    if (!model) return;
    model.pending = model.pending.filter((q) => q.requestId !== requestId);
    model.version++;
    this.changed();
  }

  /** Answers an open request of the current session (an approval's choice, or input content). */
  async respond(requestId: string, answer: { choice?: string; content?: Record<string, unknown>; error?: string; note?: string }): Promise<boolean> {
    const model = this.current;
    if (!model || !this.client) return false;
    try {
      await this.client.call(Method.RequestRespond, { session_id: model.sessionId, request_id: requestId, ...answer });
      return true;
    } catch (err) {
      // Answered elsewhere first (4012): the card goes with its request.resolved; say so.
      if (err instanceof RpcError && err.code === ErrorCode.RequestResolved) {
        this.toast("Already answered (in another tab or client)", "info");
        return true;
      }
      this.toast(`Could not answer: ${errorText(err)}`, "error");
      return false;
    }
  }

  async interrupt(): Promise<void> {
    const model = this.current;
    if (!model || !this.client || this.linkDown) return;
    // "You stopped this" comes back from the gateway with the reply (`stop_reason: "user"`).
    try {
      await this.client.call(Method.SessionInterrupt, { session_id: model.sessionId });
    } catch (err) {
      this.toast(`Interrupt failed: ${errorText(err)}`, "error");
    }
  }

  async rename(sessionId: string, title: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionUpdate, { session_id: sessionId, title });
      if (this.current?.sessionId === sessionId) {
        this.current.title = title;
        this.current.version++;
      }
      await this.refreshSessions();
    } catch (err) {
      this.toast(`Rename failed: ${errorText(err)}`, "error");
    }
  }

  search(text: string): void {
    this.searchQuery = text;
    this.changed();
    void this.refreshSessions();
  }

  toggleArchived(): void {
    this.showArchived = !this.showArchived;
    this.changed();
    void this.refreshSessions();
  }

  async archive(sessionId: string, archived: boolean): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionUpdate, { session_id: sessionId, archived });
      await this.refreshSessions();
      this.toast(archived ? "Session archived" : "Session back in the list", "info");
    } catch (err) {
      this.toast(`Archive failed: ${errorText(err)}`, "error");
    }
  }

  /**
   * Downloads the transcript (`GET /api/sessions/{id}/export?format=markdown`, the active branch with
   * its compression lineage) as a file: fetched with the key's header, saved through a blob link.
   */
  async download(sessionId: string, title: string): Promise<void> {
    try {
      const res = await fetch(`/api/sessions/${encodeURIComponent(sessionId)}/export?format=markdown`, { headers: this.authHeaders() });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const a = document.createElement("a");
      a.href = url;
      a.download = `${(title || sessionId).replace(/[^\w.-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || sessionId}.md`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      this.toast(`Download failed: ${errorText(err)}`, "error");
    }
  }

  /** Deletes the session and its transcript for good (the row asked first). */
  async deleteSession(sessionId: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionDelete, { session_id: sessionId });
      this.forgetPageState(sessionId);
      if (this.currentId === sessionId) {
        this.unsubscribe?.();
        this.unsubscribe = undefined;
        this.current = undefined;
        this.currentId = undefined;
        this.location.hash = "";
      }
      await this.refreshSessions();
      this.toast("Session deleted", "info");
    } catch (err) {
      this.toast(`Delete failed: ${errorText(err)}`, "error");
    }
  }

  async close(sessionId: string): Promise<void> {
    try {
      await this.requireClient().call(Method.SessionClose, { session_id: sessionId });
      await this.refreshSessions();
    } catch (err) {
      this.toast(`Close failed: ${errorText(err)}`, "error");
    }
  }

  /** Recoverable ends come back with a resume; user closes need `session.reopen`. */
  async reopen(sessionId: string): Promise<void> {
    const client = this.requireClient();
    const summary = this.sessions.find((s) => s.session_id === sessionId);
    const reason = summary?.end_reason ?? this.current?.endReason;
    try {
      if (!isRecoverableEnd(reason)) await client.call(Method.SessionReopen, { session_id: sessionId });
      if (this.currentId === sessionId) this.current = undefined;
      this.navigate(sessionId);
      if (this.currentId === sessionId) await this.openSession(sessionId);
      this.toast("Session reopened", "ok");
    } catch (err) {
      this.toast(`Reopen failed: ${errorText(err)}`, "error");
    }
  }

  /** `config.set {key: "model"}`; a guarded model first asks (the confirm_required round trip). */
  async switchModel(modelId: string, confirm = false): Promise<void> {
    const model = this.current;
    if (!model && !this.currentId) return this.pickDraftModel(modelId, confirm);
    if (!model || !this.client) return;
    this.confirm = undefined;
    try {
      const res = await this.client.call(Method.ConfigSet, { session_id: model.sessionId, key: "model", value: modelId, ...(confirm ? { confirm: true } : {}) });
      if (res.status === "confirm_required") {
        this.guarded.add(modelId);
        this.confirm = { model: modelId, message: res.confirm_message ?? `Switching to ${modelId} needs confirmation.` };
      } else if (res.status === "pending" && modelId === model.model) {
        // Back to the model in use: the stashed switch is now a no-op (no model.switched comes).
        delete model.pendingModel;
        model.version++;
      } else if (res.status === "pending") {
        model.pendingModel = modelId;
        model.version++;
        this.toast(`${modelId} will be used from the next turn`, "info");
      } else {
        delete model.pendingModel;
        model.model = modelId;
        model.version++;
      }
    } catch (err) {
      this.toast(`Model switch failed: ${errorText(err)}`, "error");
    }
    this.changed();
  }

  /** A draft's model: the session is created on it (a guarded one asks here first, as a switch would). */
  private pickDraftModel(modelId: string, confirm: boolean): void {
    this.confirm = undefined;
    if (this.guarded.has(modelId) && !confirm) this.confirm = { model: modelId, message: `${modelId} needs confirmation. Use it for this session?` };
    else this.draftModel = modelId;
    this.changed();
  }

  cancelConfirm(): void {
    this.confirm = undefined;
    this.changed();
  }

  async refreshTodo(): Promise<void> {
    const model = this.current;
    if (!model || !this.client || model.state === "ended") return;
    try {
      if (applyTodo(model, await this.client.call(Method.TodoGet, { session_id: model.sessionId }))) this.changed();
    } catch {
      // shown from frames anyway
    }
  }
}
