/**
 * The connection status stream. `connected` is emitted only once every subscription has caught
 * up, so "connected" always means "live and complete", never "socket open but behind".
 */
export type ClientStatus =
  | { state: "connecting"; attempt: number }
  | {
      state: "connected";
      epoch: string;
      /** The server's epoch differs from the previous connection's: the gateway restarted. */
      restarted: boolean;
      /** True after a reconnect (as opposed to the first connect). */
      reconnected: boolean;
    }
  | { state: "reconnecting"; attempt: number; delayMs: number; reason: string }
  | { state: "catching_up"; sessions: string[] }
  | { state: "closed" };

export type ClientStatusState = ClientStatus["state"];
