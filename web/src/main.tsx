/** Entry point: one controller per tab, rendered by Preact. */
import { render } from "preact";
import { App } from "./app.js";
import { configureBlobs } from "./attachments.js";
import { AppController } from "./controller.js";
import { applyTheme, storedTheme } from "./settings.js";
import "./styles.css";

applyTheme(storedTheme(window.localStorage));
const ctl = new AppController(window.localStorage, window.location);
configureBlobs(() => ctl.token);
window.addEventListener("hashchange", () => {
  const id = ctl.sessionFromHash();
  if (id && id !== ctl.currentId) void ctl.openSession(id);
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") ctl.wake();
});
// `offline` is shown at once (the socket may look open for seconds); `online` probes it again.
window.addEventListener("offline", () => ctl.goOffline());
window.addEventListener("online", () => ctl.goOnline());
window.addEventListener("focus", () => ctl.wake());

render(<App ctl={ctl} />, document.getElementById("app")!);
void ctl.start();
