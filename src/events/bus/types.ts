/**
 * The Bus: how the nodes of one Tether deployment see each other's sessions. The node that owns a
 * session publishes every frame it delivers (in seq order); any node can follow a session's frames
 * live and read the recent ones (the transient frames a `since()` needs that the store does not
 * keep). Global events (session list changes, reclaims) reach every other node.
 *
 * Frames travel as their JSON-RPC notification text (`wire`), the exact string the owner sent to
 * its own viewers, so a remote viewer gets byte-identical frames and nothing is re-encoded.
 */
export interface BusEntry {
  seq: number;
  wire: string;
}

export type BusFrameListener = (seq: number, wire: string) => void;

/** A call forwarded to the node that owns a session (prompt.submit, interrupt, config.set). */
export interface BusRequest {
  /** Which handler on the target node (one per profile's SessionManager). */
  service: string;
  method: string;
  params: unknown;
}

/** Answers a forwarded call; a thrown TetherError reaches the caller as the same TetherError. */
export type BusRequestHandler = (request: BusRequest) => Promise<unknown>;
export type BusGlobalListener = (wire: string) => void;

export interface Bus {
  /** "local" (one process) or "redis". */
  readonly kind: string;
  /** This node's name on the bus; its own globals are not echoed back to it. */
  readonly nodeId: string;
  /**
   * Appends a frame of a session. Seqs of a session only rise: a frame whose seq is not above the
   * last one published (a stale owner's) is dropped. Fire-and-forget; `flush()` waits for it.
   */
  publish(sessionId: string, seq: number, wire: string): void;
  /**
   * Follows a session: the listener gets every frame with seq > afterSeq that is still retained,
   * then every later one, in seq order, each once.
   */
  subscribe(sessionId: string, afterSeq: number, listener: BusFrameListener): () => void;
  /** Retained frames with seq > afterSeq, oldest first (at most the ring size are retained). */
  readAfter(sessionId: string, afterSeq: number): Promise<BusEntry[]>;
  /** Sends a global event to every other node. */
  publishGlobal(wire: string): void;
  subscribeGlobal(listener: BusGlobalListener): () => void;
  /** Handles calls other nodes forward to this one for `service`. */
  serve(service: string, handler: BusRequestHandler): () => void;
  /**
   * Calls `nodeId` and resolves with its answer. Rejects with the handler's TetherError, or with
   * `NodeUnreachable` when no such node listens (dead) or it does not answer within `timeoutMs`.
   */
  request(nodeId: string, request: BusRequest, timeoutMs?: number): Promise<unknown>;
  /** Resolves once everything published so far is accepted by the bus. */
  flush(): Promise<void>;
  /**
   * How old (ms) the newest frame read from another node was when it arrived here; null before the
   * first, and absent on the in-process bus (nothing travels). For `tether_bus_lag_seconds`.
   */
  lagMs?(): number | null;
  close(): Promise<void>;
}

export interface BusOptions {
  /** Frames retained per session (the replay ring size). */
  ringFrames: number;
  nodeId: string;
}

/** The target node of a forwarded call is gone (or silent): the caller may take the session over. */
export class NodeUnreachable extends Error {
  override name = "NodeUnreachable";
  constructor(readonly nodeId: string, reason: string) {
    super(`node ${nodeId} is unreachable: ${reason}`);
  }
}

/** What a forwarded call's failure looks like on the wire between nodes. */
export interface WireError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}
