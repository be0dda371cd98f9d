/** The typed frame union of protocol/frames.ts: every event type has its payload, narrowing needs no cast. */
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  EventType,
  isEventFrame,
  isEventType,
  isFrameOf,
  type EventFrame,
  type EventPayloads,
  type EventTypeName,
  type Frame,
  type FrameOf,
  type MessageDeltaPayload,
  type PayloadOf,
  type SessionFrame,
  type TurnCompletePayload,
} from "../../src/protocol/index.js";

function frame(type: string, payload: unknown): Frame {
  return { type, session_id: "ses_1", seq: 1, epoch: "e", ts: 1, payload };
}

describe("typed frames", () => {
  it("maps every event type to a payload, and only those", () => {
    expectTypeOf<keyof EventPayloads>().toEqualTypeOf<EventTypeName>();
    expectTypeOf<EventFrame["type"]>().toEqualTypeOf<EventTypeName>();
    expectTypeOf<PayloadOf<"message.delta">>().toEqualTypeOf<MessageDeltaPayload>();
    expectTypeOf<FrameOf<"turn.complete">["payload"]>().toEqualTypeOf<TurnCompletePayload>();
    expectTypeOf<SessionFrame["type"]>().not.toEqualTypeOf<EventTypeName>();
    expectTypeOf<Extract<SessionFrame, { type: "gateway.ready" }>>().toEqualTypeOf<never>();
  });

  it("a switch on type narrows the payload (no cast)", () => {
    const describeFrame = (f: EventFrame): string => {
      switch (f.type) {
        case "message.delta":
          expectTypeOf(f.payload).toEqualTypeOf<MessageDeltaPayload>();
          return f.payload.text;
        case "turn.complete":
          return f.payload.status;
        case "model.switched":
          return f.payload.to.model;
        default:
          return f.type;
      }
    };
    const got: string[] = [];
    for (const f of [frame("message.delta", { message_id: "m", text: "hi" }), frame("turn.complete", { turn_id: "t", status: "complete" })]) {
      if (isEventFrame(f)) got.push(describeFrame(f));
    }
    expect(got).toEqual(["hi", "complete"]);
  });

  it("isEventFrame knows exactly the protocol's types; isFrameOf narrows to the ones named", () => {
    for (const type of Object.values(EventType)) expect(isEventType(type)).toBe(true);
    expect(isEventType("message.deltas")).toBe(false);
    expect(isEventFrame(frame("future.event", {}))).toBe(false);
    const f = frame("reasoning.delta", { message_id: "m", text: "why" });
    expect(isFrameOf(f, "message.delta")).toBe(false);
    if (!isFrameOf(f, "message.delta", "reasoning.delta")) throw new Error("not narrowed");
    expectTypeOf(f.payload).toEqualTypeOf<MessageDeltaPayload>();
    expect(f.payload.text).toBe("why");
  });
});
