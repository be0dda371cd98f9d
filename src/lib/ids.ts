/** Ids enter through one small interface, so tests can make them predictable. */
import { randomBytes, randomUUID } from "node:crypto";

export interface IdGenerator {
  /** A new id with a readable prefix, e.g. `ses_…`, `msg_…`, `turn_…`. */
  next(prefix: string): string;
  /** A W3C trace-context compatible trace id: 32 lowercase hex digits, not all zero. */
  traceId(): string;
}

export const randomIds: IdGenerator = {
  next: (prefix) => `${prefix}_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
  traceId: () => {
    for (;;) {
      const hex = randomBytes(16).toString("hex");
      if (!/^0+$/.test(hex)) return hex;
    }
  },
};

/** Deterministic ids for tests: `prefix_1`, `prefix_2`, … */
export class SequentialIds implements IdGenerator {
  private n = 0;
  next(prefix: string): string {
    return `${prefix}_${++this.n}`;
  }
  traceId(): string {
    return (++this.n).toString(16).padStart(32, "0");
  }
}
