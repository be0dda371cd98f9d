/** What the workspace tools of one profile share. */
import type { WorkspaceSettings } from "../../../config/index.js";
import type { Clock } from "../../../lib/clock.js";
import type { WorkspaceRoots } from "./paths.js";

export interface WorkspaceOptions {
  clock: Clock;
  /** The profile's roots as the config says now, and the gateway's own paths (read at every call: live reload applies). */
  roots(): WorkspaceRoots;
  /** The profile's workspace settings as the config says now (sandbox, network, env, process limit). */
  settings(): WorkspaceSettings;
}
