/**
 * New session rows: one a client creates, and the hidden child a delegation task runs in. Flags
 * are stored without undefined keys (they are JSON in the store).
 */
import type { SessionRow } from "../../store/types.js";
import type { CreateParams, DelegateChild } from "../core/types.js";

export interface NewSession {
  id: string;
  principal: string;
  profile: string;
  params: CreateParams;
  provider: string;
  model: string;
  modelConfig: SessionRow["model_config"];
  now: number;
}

/** The row of a session a client creates (`session.create`). */
export function newSessionRow(s: NewSession): SessionRow {
  const { params, now } = s;
  const row: SessionRow = {
    id: s.id,
    principal: s.principal,
    profile: s.profile,
    title: params.title ?? "",
    parent_session_id: null,
    model: s.model,
    provider: s.provider,
    model_config: s.modelConfig,
    flags: {
      hidden: params.hidden,
      follow_profile_config: params.follow_profile_config,
      room_plumbing: params.room_plumbing,
      close_on_disconnect: params.close_on_disconnect,
      system_prompt: params.system_prompt,
      cwd: params.cwd,
      metadata: params.metadata,
      wake_on_delivery: params.wake_on_delivery,
      client_tools: params.client_tools && params.client_tools.length > 0 ? params.client_tools : undefined,
    },
    todo: { revision: 0, items: [] },
    started_at: now,
    last_activity_at: now,
    ended_at: null,
    end_reason: null,
    seq_reserved: 0,
    active_turn: null,
  };
  row.flags = JSON.parse(JSON.stringify(row.flags)); // drop undefined keys
  return row;
}

/**
 * The row of a delegation task's hidden child (`child`: see DelegateChild): the origin's principal,
 * profile, model (or the reviewer's) and model identity, a title from the task's goal, the origin
 * as its parent, and of the origin's flags only its system prompt and cwd, with the `delegate`
 * link. No todo, no turn, nothing reserved.
 */
export function delegateChildRow(child: DelegateChild, childId: string, now: number): SessionRow {
  const { origin, delegation: d, taskIndex: index } = child;
  return {
    ...origin,
    ...(child.model ?? {}),
    id: childId,
    title: `${d.kind}: ${d.tasks[index]!.goal.split("\n")[0]!.slice(0, 80)}`,
    parent_session_id: origin.id,
    flags: JSON.parse(
      JSON.stringify({
        hidden: true,
        system_prompt: origin.flags.system_prompt,
        cwd: origin.flags.cwd,
        delegate: { delegation_id: d.id, origin_session_id: origin.id, task_index: index },
      }),
    ),
    todo: { revision: 0, items: [] },
    started_at: now,
    last_activity_at: now,
    ended_at: null,
    end_reason: null,
    seq_reserved: 0,
    active_turn: null,
  };
}
