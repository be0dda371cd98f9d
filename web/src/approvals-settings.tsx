/**
 * Settings → Approvals: the tools this principal approved "Always" in the default profile
 * (`approvals.list`), each with Revoke (`approvals.revoke`): from then on its calls ask again.
 */
import { useEffect, useState } from "preact/hooks";
import { Method } from "../../src/client/index.js";
import type { StoredApproval } from "../../src/protocol/index.js";
import type { AppController } from "./controller.js";

export function ApprovalSettings({ ctl }: { ctl: AppController }) {
  const [rules, setRules] = useState<StoredApproval[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const load = () => {
    const client = ctl.sdk;
    if (!client) return;
    client.call(Method.ApprovalsList, {}).then(
      (r) => setRules(r.approvals),
      (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
    );
  };
  useEffect(load, [ctl.sdk]);
  const revoke = (tool: string) => {
    void ctl.sdk
      ?.call(Method.ApprovalsRevoke, { tool })
      .then(() => {
        ctl.toast(`${tool} asks again from now on`, "info");
        load();
      })
      .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
  };
  return (
    <fieldset class="settings-group" data-testid="approval-settings">
      <legend>Approvals</legend>
      {error ? (
        <p class="settings-note" role="alert">
          Could not read the approvals: {error}
        </p>
      ) : rules === undefined ? (
        <p class="settings-note">Loading…</p>
      ) : rules.length === 0 ? (
        <p class="settings-note">No tool is approved "Always": every call of a tool that asks, asks.</p>
      ) : (
        <ul class="approval-rules">
          {rules.map((r) => (
            <li key={r.tool}>
              <code>{r.tool}</code>
              <span class="settings-note">always, since {new Date(r.created_at).toLocaleDateString()}</span>
              <button type="button" class="btn btn-sm" aria-label={`Revoke ${r.tool}`} onClick={() => revoke(r.tool)}>
                Revoke
              </button>
            </li>
          ))}
        </ul>
      )}
    </fieldset>
  );
}
