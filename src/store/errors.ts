/**
 * The errors a commit can fail with on purpose. Each refuses the WHOLE transaction, so the write
 * that lost its right (a stale owner, a delegation taken over, a second delivery) leaves nothing.
 */

/** A write carrying a stale fencing token. The owner lost the session to another process. */
export class FenceError extends Error {
  override name = "FenceError";
  constructor(
    readonly sessionId: string,
    readonly token: number,
  ) {
    super(`stale owner: lease of session ${sessionId} is no longer held with token ${token}`);
  }
}

/**
 * A `delegation.update` fenced by `owner` found the delegation no longer running under that owner
 * (another process took it over, or it ended): the transaction is refused.
 */
export class DelegationLostError extends Error {
  override name = "DelegationLostError";
  constructor(
    readonly delegationId: string,
    readonly owner: string,
  ) {
    super(`delegation ${delegationId} is no longer run by ${owner}`);
  }
}

/** `delegation.deliver` found the delegation already delivered: the transaction is refused. */
export class AlreadyDeliveredError extends Error {
  override name = "AlreadyDeliveredError";
  constructor(readonly delegationId: string) {
    super(`delegation ${delegationId} was already delivered`);
  }
}

/** A `request.update` found the request no longer in the status it expected: answered already. */
export class RequestStateError extends Error {
  override name = "RequestStateError";
  constructor(readonly requestId: string) {
    super(`request ${requestId} was already answered`);
  }
}

/** An `envelope.update` fenced by `owner` found the envelope's claim held by nobody or another process. */
export class EnvelopeClaimLostError extends Error {
  override name = "EnvelopeClaimLostError";
  constructor(
    readonly envelopeId: string,
    readonly owner: string,
  ) {
    super(`envelope ${envelopeId} is no longer claimed by ${owner}`);
  }
}
