/** What the workspace tools of one profile share. */
import type { Clock } from "../../../lib/clock.js";

export interface WorkspaceOptions {
  clock: Clock;
  /** `tools.workspace_roots` as the config says now (read at every call: live reload applies). */
  roots(): readonly string[];
}
