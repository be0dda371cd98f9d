/**
 * Why a session ended: a closed, documented set. Recoverable ends were done *to* the session by
 * the gateway (reaping, restarts); a later `session.resume` reopens them with the transcript
 * intact. The others were asked for; only an explicit `session.reopen` undoes them.
 */
export const EndReason = {
  UserClose: "user_close",
  ClientDisconnect: "client_disconnect",
  OrphanReap: "orphan_reap",
  SupersededByResume: "superseded_by_resume",
  StartupOrphanReap: "startup_orphan_reap",
  Shutdown: "shutdown",
  IdleTtl: "idle_ttl",
  LruEvicted: "lru_evicted",
  Compression: "compression",
  /** A sub-agent's (delegate) session whose task ended. */
  DelegationComplete: "delegation_complete",
  /** Being deleted by retention (`retention.ended_after_days`); gone shortly after. Not recoverable. */
  Retention: "retention",
} as const;

export type EndReasonName = (typeof EndReason)[keyof typeof EndReason];

export const RECOVERABLE_END_REASONS: ReadonlySet<string> = new Set<string>([
  EndReason.OrphanReap,
  EndReason.SupersededByResume,
  EndReason.StartupOrphanReap,
  EndReason.Shutdown,
  EndReason.IdleTtl,
  EndReason.LruEvicted,
]);

export function isRecoverableEnd(reason: string | null | undefined): boolean {
  return reason !== null && reason !== undefined && RECOVERABLE_END_REASONS.has(reason);
}
