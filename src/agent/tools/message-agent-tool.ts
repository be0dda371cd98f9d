/**
 * `message_agent { to, text }`: sends a message to another agent — a bot of this gateway (`to:
 * "bot-name"`) or of a peer gateway (`to: "bot-name@peer"`) — and returns at once with the
 * envelope id. The envelope is written in the same transaction as this call's result (the outbox
 * is durable from the first instant); the reply arrives later in this conversation as a message
 * (`display_kind: agent_reply`), starting no turn unless the session asked for one.
 */
import * as z from "zod";
import type { WriteOp } from "../../store/types.js";
import { ToolInputError, ToolOutput, type Tool } from "./registry.js";

/** Where envelopes go: the composition root's outbox, bound to the tool runtime's profile. */
export interface AgentMessenger {
  /** The envelope of one call: its ops (written with the result) and the wake to run once they committed. */
  prepare(req: { sessionId: string; to: string; text: string }): Promise<{ envelope_id: string; to: string; ops: WriteOp[]; committed: () => void }>;
}

const Args = z.object({
  to: z.string().trim().min(1).max(200),
  text: z.string().min(1).max(100_000),
});

export function messageAgentTool(messenger: () => AgentMessenger | undefined): Tool {
  return {
    // Every call sends a message: never re-run blindly.
    annotations: { idempotent: false, destructive: false, openWorld: true },
    spec: {
      name: "message_agent",
      description:
        'Send a message to another agent: a bot of this gateway (to: "bot-name") or of a peer gateway (to: "bot-name@peer"). ' +
        "Returns at once with an envelope_id; the reply arrives later as a message in this conversation. Do not wait for it.",
      parameters: {
        type: "object",
        properties: { to: { type: "string" }, text: { type: "string" } },
        required: ["to", "text"],
      },
    },

    async execute(args, ctx) {
      const parsed = Args.safeParse(args);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "args"}: ${i.message}`).join("; ");
        throw new ToolInputError(`invalid message_agent arguments: ${issues}`);
      }
      const m = messenger();
      if (!m) throw new ToolInputError("message_agent is not available on this gateway");
      let prepared: Awaited<ReturnType<AgentMessenger["prepare"]>>;
      try {
        prepared = await m.prepare({ sessionId: ctx.sessionId, to: parsed.data.to, text: parsed.data.text });
      } catch (err) {
        // An address that names nothing is the model's to correct.
        throw new ToolInputError(err instanceof Error ? err.message : String(err));
      }
      const result = {
        envelope_id: prepared.envelope_id,
        to: prepared.to,
        status: "pending",
        note: "Sent in the background; the reply will arrive as a message in this conversation.",
      };
      return new ToolOutput(result, JSON.stringify(result), { ops: prepared.ops, committed: prepared.committed });
    },
  };
}
