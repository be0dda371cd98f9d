/** The SDK client as the terminal commands use it: Node has no global WebSocket, so `ws` is passed in. */
import WebSocket from "ws";
import { TetherClient } from "../client/index.js";

export function createNodeClient(opts: { url: string; token?: string | undefined }): TetherClient {
  return new TetherClient({ url: opts.url, token: opts.token || undefined, WebSocket });
}
