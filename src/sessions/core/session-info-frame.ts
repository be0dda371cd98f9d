/**
 * The payload of a `session.info` frame, from the row: a leaf, so the runtime can emit it without
 * importing the session-info room's functions (which know the runtime).
 */
import type { SessionRow } from "../../store/types.js";

export function sessionInfo(row: SessionRow): Record<string, unknown> {
  return { title: row.title, profile: row.profile, model: row.model, provider: row.provider };
}
