/**
 * `Idempotency-Key` on the POSTs that start work. The first request with a key claims it (stored,
 * scoped to the principal, with a fingerprint of method + path + body) and records its answer when
 * it is done; a replay gets that answer instead of running again; the same key with a different
 * request answers 409 `idempotency_key_reused`, and while the first one still runs, 409
 * `idempotency_key_in_progress` with Retry-After. A request that fails releases its key, so a
 * retry runs for real.
 */
import { createHash } from "node:crypto";
import type { Caller, HttpRecords } from "../../sessions/index.js";
import { HttpErrors, HttpError } from "./errors.js";
import type { AppContext } from "./context.js";

export const IDEMPOTENCY_HEADER = "idempotency-key";

export type IdempotencyClaim =
  | { kind: "none" }
  | { kind: "fresh"; key: string; record(status: number, body: unknown): Promise<void>; release(): Promise<void> }
  | { kind: "replay"; key: string; status: number; body: unknown };

/** Claims the request's `Idempotency-Key` (if it has one) in `records` (see `idempotencyRecords`). */
export async function claimIdempotency(c: AppContext, records: HttpRecords, caller: Caller): Promise<IdempotencyClaim> {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return { kind: "none" };
  if (key.length === 0 || key.length > 255) {
    throw new HttpError(400, "invalid_params", "Idempotency-Key must be 1 to 255 characters", "Idempotency-Key");
  }
  const body = await c.req.text();
  const fingerprint = createHash("sha256").update(`${c.req.method} ${c.req.path}\n`).update(body).digest("hex");
  const { claimed, record } = await records.claimKey(caller, key, fingerprint);
  if (claimed) {
    let settled = false;
    return {
      kind: "fresh",
      key,
      async record(status, value) {
        if (settled) return;
        settled = true;
        await records.completeKey(caller, key, status, JSON.stringify(value));
      },
      async release() {
        if (settled) return;
        settled = true;
        await records.releaseKey(caller, key);
      },
    };
  }
  if (record.fingerprint !== fingerprint) throw HttpErrors.idempotencyMismatch();
  if (record.status === null || record.body === null) throw HttpErrors.idempotencyInProgress();
  return { kind: "replay", key, status: record.status, body: JSON.parse(record.body) };
}

/** Runs `fn` under a fresh claim: releases the key if it throws. */
export async function underClaim<T>(claim: IdempotencyClaim, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (claim.kind === "fresh") await claim.release().catch(() => undefined);
    throw err;
  }
}
