/**
 * Creating a session: its row — with the provider and model it will use, checked as routable, and
 * their identity — and its lease in one transaction (a sibling's sweep never sees it unowned),
 * then its runtime, its first `session.info`, the viewer, and the Snapshot. Bound from the first
 * instant, so a viewer that leaves meanwhile cannot park it under the caller.
 */
import { EventType, type Snapshot } from "../protocol/index.js";
import { storage } from "./core/session-access.js";
import { checkClientTools } from "./core/client-tools.js";
import { sessionInfo } from "./core/session-info.js";
import type { Caller, CreateParams, SessionManagerDeps } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import { identityOf, mergeModelConfig } from "./models/model-identity.js";
import { newSessionRow } from "./views/session-rows.js";
import type { SessionParts } from "./assembly.js";

export function createSession(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer: Viewer | undefined,
): Promise<Snapshot> {
  const { switching, binding, registry, ownership } = parts;
  const { provider, model } = switching.pickModel(params.provider, params.model);
  const row = newSessionRow({
    id: deps.ids.next("ses"),
    principal: caller.principal,
    profile: params.profile ?? parts.settings.profile?.name ?? "default",
    params,
    provider,
    model,
    modelConfig: mergeModelConfig({}, identityOf(switching.catalog, provider, model)),
    now: deps.clock.now(),
  });
  return binding.binding(row.id, async () => {
    // Refused before the row exists: a request with a colliding client tool leaves nothing behind.
    await checkClientTools(deps.tools, row.id, params.client_tools ?? []);
    await storage(() => deps.committer.enqueue([{ op: "session.insert", row }, ownership.insertOp(row.id)]));
    const runtime = await registry.open(row.id);
    runtime.log.emit(EventType.SessionInfo, sessionInfo(row));
    if (viewer) binding.attach(runtime, viewer);
    deps.logger.info({ session_id: row.id, provider, model }, "session created");
    return parts.views.snapshot(runtime);
  });
}
