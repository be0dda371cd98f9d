/**
 * JSON-RPC request/answer bookkeeping for one socket: ids, the pending map, per-call timeouts.
 * A socket that goes away takes its pending calls with it (`rejectAll`): an answer can never
 * arrive on another socket.
 */
import type { RpcResponse } from "../protocol/index.js";
import { RpcError, TimeoutError } from "./errors.js";

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(err: Error): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export class RpcChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(private readonly send: (text: string) => void) {}

  request(method: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const entry: Pending = { method, resolve, reject, timer: undefined };
      if (timeoutMs !== undefined) {
        entry.timer = setTimeout(() => {
          // A late answer is then ignored: its id is no longer pending.
          this.pending.delete(id);
          reject(new TimeoutError(method, timeoutMs));
        }, timeoutMs);
      }
      this.pending.set(id, entry);
      try {
        this.send(JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params }));
      } catch (err) {
        this.settle(id);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Routes an answer to its caller. Unknown ids (timed out, or not ours) are dropped. */
  handleResponse(msg: RpcResponse): void {
    if (typeof msg.id !== "number") return;
    const entry = this.settle(msg.id);
    if (!entry) return;
    if (msg.error) entry.reject(new RpcError(entry.method, msg.error.code, msg.error.message, msg.error.data));
    else entry.resolve(msg.result);
  }

  rejectAll(err: Error): void {
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) {
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(err);
    }
  }

  get size(): number {
    return this.pending.size;
  }

  private settle(id: number): Pending | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    if (entry.timer) clearTimeout(entry.timer);
    return entry;
  }
}
