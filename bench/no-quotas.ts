/**
 * The benchmarks load one principal far past the quotas a deployment should keep (thousands of
 * sessions, hundreds of turns at once): they switch the per-principal quotas off, by env for a
 * spawned gateway and by config for one in-process. What they measure is the gateway, not its refusals.
 */
export const NO_QUOTAS: Record<string, string> = {
  TETHER_QUOTA_LIVE_SESSIONS: "0",
  TETHER_QUOTA_TURNS: "0",
  TETHER_QUOTA_QUEUED_PROMPT_BYTES: "0",
  TETHER_QUOTA_SESSIONS_PER_MINUTE: "0",
};

export const NO_QUOTA_CONFIG = { max_live_sessions: 0, max_turns: 0, max_queued_prompt_bytes: 0, sessions_per_minute: 0 };
