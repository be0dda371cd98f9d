/**
 * Reload triggers for the config file: SIGHUP, and changes to the file itself. The folder is
 * watched rather than the file, because editors replace a file by renaming a new one over it.
 */
import { watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";

export function watchConfigFile(path: string, onChange: () => void, debounceMs = 150): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (name !== null && name !== basename(path)) return;
      clearTimeout(timer);
      timer = setTimeout(onChange, debounceMs);
    });
    watcher.on("error", () => undefined);
    watcher.unref();
  } catch {
    // No folder to watch (a missing home): SIGHUP still reloads.
  }
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
