/** The epoch names one process instance: it changes on every start, so a client can tell. */
import { randomBytes } from "node:crypto";

export function newEpoch(now = Date.now()): string {
  return `${now.toString(36)}-${randomBytes(4).toString("hex")}`;
}
