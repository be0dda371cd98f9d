/**
 * A tool the browser runs itself: sessions made here declare it (`session.create { client_tools }`),
 * and when the model calls it the SDK's `onToolCall` handler answers from this page — the user's own
 * clock and time zone, which the gateway cannot know.
 */
import type { ClientToolSpec, TetherClient } from "../../src/client/index.js";

export const BROWSER_TOOLS: ClientToolSpec[] = [
  { name: "browser_time", description: "The current time and time zone of the user's browser", parameters: { type: "object", properties: {} } },
];

export function installBrowserTools(client: TetherClient): void {
  client.onToolCall("browser_time", () => ({ now: new Date().toISOString(), time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone }));
}

/** True for a tool this page answers itself, so no card is shown for its call. */
export function isBrowserTool(name: string | undefined): boolean {
  return BROWSER_TOOLS.some((t) => t.name === name);
}
