/**
 * An editor, as far as ACP goes: `@agentclientprotocol/sdk`'s client side, unchanged, spawning
 * `tether acp` (the compiled CLI) and speaking ACP over its stdio. It records every session/update
 * it gets, answers permission requests with a chosen option, and serves fs/read_text_file.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const BIN = fileURLToPath(new URL("../../bin/tether.js", import.meta.url));

export interface Editor {
  child: ChildProcess;
  agent: acp.ClientContext;
  updates: acp.SessionNotification[];
  permissions: acp.RequestPermissionRequest[];
  /** What the next permission request is answered with. */
  answer: { optionId: string } | "cancelled";
  /** Files the editor serves to fs/read_text_file. */
  files: Map<string, string>;
  stderr(): string;
  initialize(caps?: acp.ClientCapabilities): Promise<acp.InitializeResponse>;
  close(): Promise<void>;
}

export async function spawnEditor(args: string[], env: Record<string, string> = {}): Promise<Editor> {
  const child = spawn(process.execPath, [BIN, "acp", ...args], {
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: join(mkdtempSync(join(tmpdir(), "tether-acp-")), "config.yaml"), ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const editor: Editor = {
    child,
    agent: undefined as unknown as acp.ClientContext,
    updates: [],
    permissions: [],
    answer: { optionId: "once" },
    files: new Map(),
    stderr: () => stderr,
    initialize: (caps = { fs: { readTextFile: true, writeTextFile: false } }) =>
      editor.agent.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps }),
    async close() {
      child.stdin!.end();
      if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once("exit", r));
    },
  };
  const app = acp
    .client({ name: "test-editor" })
    .onNotification(acp.methods.client.session.update, ({ params }) => void editor.updates.push(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      editor.permissions.push(params);
      return { outcome: editor.answer === "cancelled" ? { outcome: "cancelled" } : { outcome: "selected", ...editor.answer } };
    })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      const content = editor.files.get(params.path);
      if (content === undefined) throw acp.RequestError.invalidParams({ path: params.path }, "no such file");
      return { content };
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>);
  editor.agent = app.connect(stream).agent;
  return editor;
}

/** The agent's message text of a session's updates, joined. */
export function agentText(updates: readonly acp.SessionNotification[], sessionId: string): string {
  return updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => {
      const c = (u.update as { content: acp.ContentBlock }).content;
      return c.type === "text" ? c.text : "";
    })
    .join("");
}
