/**
 * The folder picker of a new session (#23, #27): the session works in a folder the operator
 * allowed — one of the profile's workspace roots or a folder inside one, browsed one level at a
 * time with `workspace.folders`. Nothing here is typed: the page offers only what the gateway
 * listed, and the gateway confines the cwd again when it creates the session. A profile without
 * workspace roots shows no picker.
 */
import { useEffect, useState } from "preact/hooks";
import type { WorkspaceFoldersResult } from "../../src/protocol/methods.js";
import type { AppController } from "./controller.js";
import { Icon } from "./icons.js";

/** The folder above `path`, or null when `path` is a root (back to the list of roots). */
function parentOf(path: string, roots: readonly string[]): string | null {
  if (roots.includes(path)) return null;
  const up = path.replace(/\/[^/]+\/?$/, "");
  return up === "" ? null : up;
}

function lastPart(path: string): string {
  return path.split("/").filter(Boolean).pop() ?? path;
}

export function FolderPicker({ ctl }: { ctl: AppController }) {
  const [roots, setRoots] = useState<string[]>([]);
  const [open, setOpen] = useState(false);
  const [listing, setListing] = useState<WorkspaceFoldersResult | null>(null);
  const connected = ctl.status.state === "connected";
  useEffect(() => {
    if (!connected) return;
    ctl.listFolders().then((r) => setRoots(r.roots), () => setRoots([]));
  }, [connected]);
  if (roots.length === 0) return null;
  const browse = (path: string | null) => {
    if (path === null) return setListing(null);
    ctl.listFolders(path).then(setListing, (err: unknown) => ctl.toast(`Could not open that folder: ${err instanceof Error ? err.message : String(err)}`, "error"));
  };
  const choose = (path: string | undefined) => {
    ctl.chooseFolder(path);
    setOpen(false);
  };
  return (
    <div
      class="folder-picker"
      data-testid="folder-picker"
      onKeyDown={(e) => {
        if (e.key === "Escape" && open) {
          e.stopPropagation();
          setOpen(false);
        }
      }}
    >
      <button type="button" class="btn btn-sm folder-current" aria-expanded={open} title={ctl.draftCwd ?? "No folder"} onClick={() => setOpen(!open)}>
        <Icon name="folder" />
        <span>{ctl.draftCwd ? `Folder: ${lastPart(ctl.draftCwd)}` : "No folder"}</span>
      </button>
      {open && (
        <div class="folder-panel" role="group" aria-label="Choose a folder">
          {listing?.path ? (
            <>
              <div class="folder-path" title={listing.path}>
                {listing.path}
              </div>
              <ul class="folder-list">
                <li>
                  <button type="button" class="link" onClick={() => browse(parentOf(listing.path!, roots))}>
                    Up
                  </button>
                </li>
                {listing.folders.map((f) => (
                  <li key={f}>
                    <button type="button" class="link" onClick={() => browse(`${listing.path}/${f}`)}>
                      <Icon name="folder" /> {f}
                    </button>
                  </li>
                ))}
              </ul>
              {listing.truncated && <p class="hint">More folders than shown: open one to narrow down.</p>}
              <button type="button" class="btn btn-sm btn-primary" onClick={() => choose(listing.path!)}>
                Use this folder
              </button>
            </>
          ) : (
            <ul class="folder-list">
              {roots.map((r) => (
                <li key={r}>
                  <button type="button" class="link" onClick={() => browse(r)}>
                    <Icon name="folder" /> {r}
                  </button>
                </li>
              ))}
            </ul>
          )}
          <button type="button" class="btn btn-sm" onClick={() => choose(undefined)}>
            No folder
          </button>
        </div>
      )}
    </div>
  );
}
