/**
 * Protocol constants that are wire values, pinned: a rename here is a protocol change. And the two
 * halves of the method table agree now that they live apart — `Method` (plain, for the SDK and the
 * page) and `METHOD_PARAMS` (zod, gateway only).
 */
import { describe, expect, it } from "vitest";
import {
  DELEGATION_KINDS,
  DisplayKind,
  isDelegationKind,
  isKnownMethod,
  Method,
  type DelegationResultMetadata,
} from "../../src/protocol/index.js";
import { METHOD_PARAMS } from "../../src/protocol/method-params.js";
import { deliveryMessage } from "../../src/sessions/delegation/shapes.js";
import type { DelegationRow } from "../../src/store/types.js";

describe("protocol constants", () => {
  it("display kinds and delegation kinds keep their wire values", () => {
    expect(DisplayKind).toEqual({
      CompressionSummary: "compression_summary",
      DelegationComplete: "async_delegation_complete",
      RoomPost: "room_post",
      RoomReply: "room_reply",
      AgentReply: "agent_reply",
      AgentMessage: "agent_message",
      Steer: "steer",
    });
    expect(DELEGATION_KINDS).toEqual(["delegate", "review"]);
    for (const k of DELEGATION_KINDS) expect(isDelegationKind(k)).toBe(true);
    for (const v of ["Delegate", "", null, undefined, 1, {}]) expect(isDelegationKind(v)).toBe(false);
  });

  it("every method has a param schema, and isKnownMethod knows exactly those", () => {
    expect(Object.keys(METHOD_PARAMS).sort()).toEqual(Object.values(Method).sort());
    for (const m of Object.values(Method)) expect(isKnownMethod(m)).toBe(true);
    for (const m of ["", "nope", "toString", "__proto__", "hasOwnProperty"]) expect(isKnownMethod(m)).toBe(false);
  });

  it("a delivery's display_metadata is the protocol's DelegationResultMetadata", () => {
    // Only what deliveryMessage reads; the row's other (store-side) fields do not matter here.
    const row = {
      id: "dlg_1",
      principal: "p",
      origin_session_id: "ses_1",
      kind: "review",
      tasks: [
        { goal: "look", status: "completed", child_session_id: "ses_c1", result: "fine", error: null, duration_ms: 5 },
        { goal: "check", status: "failed", child_session_id: null, result: null, error: "boom", duration_ms: 7 },
      ],
      status: "completed",
      owner: "proc",
      claimed_by: null,
      claim_expires_at: null,
      attempts: 0,
      delivered_session_id: null,
      delivered_message_id: null,
      created_at: 1_000,
      completed_at: 2_500,
      delivered_at: null,
    } as DelegationRow;
    const expected: DelegationResultMetadata = {
      delegation_id: "dlg_1",
      kind: "review",
      completed: 1,
      failed: 1,
      total: 2,
      duration_ms: 1_500,
      tasks: [
        { goal: "look", status: "completed", child_session_id: "ses_c1", error: null },
        { goal: "check", status: "failed", child_session_id: null, error: "boom" },
      ],
    };
    expect(deliveryMessage(row, 3_000).display_metadata).toEqual(expected);
  });
});
