/**
 * A tool call's arguments and result as people read them, not as JSON: a command as code, a file
 * write as a preview of what it writes (an edit as a diff of its old and new text), anything else
 * as a key/value table; a result as text when it is text, else as a JSON viewer.
 */
import { useMemo } from "preact/hooks";
import { highlightJson } from "./markdown.js";

type Args = Record<string, unknown>;

const COMMAND_KEYS = ["command", "cmd", "script"];
const PATH_KEYS = ["path", "file_path", "file", "filename"];
const CONTENT_KEYS = ["content", "text", "contents", "data"];

function firstString(args: Args, keys: string[]): [string, string] | undefined {
  for (const k of keys) if (typeof args[k] === "string") return [k, args[k] as string];
  return undefined;
}

export function JsonView({ value }: { value: unknown }) {
  const html = useMemo(() => highlightJson(value), [value]);
  return (
    <pre class="code json" tabIndex={0}>
      <code class="hljs" dangerouslySetInnerHTML={{ __html: html }} />
    </pre>
  );
}

/** The old and new text of an edit, line by line: removed lines first, then added ones. */
function Diff({ before, after }: { before: string; after: string }) {
  return (
    <pre class="code diff" tabIndex={0} data-testid="args-diff">
      {before.split("\n").map((l, n) => (
        <span key={`-${n}`} class="diff-del">
          {`- ${l}\n`}
        </span>
      ))}
      {after.split("\n").map((l, n) => (
        <span key={`+${n}`} class="diff-add">
          {`+ ${l}\n`}
        </span>
      ))}
    </pre>
  );
}

function Value({ value }: { value: unknown }) {
  if (typeof value === "string") return value.includes("\n") ? <pre class="kv-text" tabIndex={0}>{value}</pre> : <span class="kv-text">{value}</span>;
  if (typeof value === "number" || typeof value === "boolean" || value === null) return <code>{String(value)}</code>;
  return <JsonView value={value} />;
}

export function ToolArgs({ args }: { args: unknown }) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return <JsonView value={args ?? {}} />;
  const a = args as Args;
  const keys = Object.keys(a);
  if (keys.length === 0) return <p class="args-none">No arguments</p>;
  const command = firstString(a, COMMAND_KEYS);
  if (command && keys.length <= 3) {
    return (
      <div class="args-command" data-testid="args-command">
        <pre class="code" tabIndex={0}>
          <code>$ {command[1]}</code>
        </pre>
        {keys.length > 1 && <KeyValues args={a} skip={[command[0]]} />}
      </div>
    );
  }
  const path = firstString(a, PATH_KEYS);
  const oldText = typeof a["old_string"] === "string" ? (a["old_string"] as string) : undefined;
  const newText = typeof a["new_string"] === "string" ? (a["new_string"] as string) : undefined;
  if (path && oldText !== undefined && newText !== undefined) {
    return (
      <div class="args-file">
        <div class="args-path">
          Edit <code>{path[1]}</code>
        </div>
        <Diff before={oldText} after={newText} />
      </div>
    );
  }
  const content = firstString(a, CONTENT_KEYS);
  if (path && content) {
    const lines = content[1].split("\n").length;
    return (
      <div class="args-file" data-testid="args-file">
        <div class="args-path">
          Write <code>{path[1]}</code> · {lines} {lines === 1 ? "line" : "lines"}
        </div>
        <pre class="code file-preview" tabIndex={0}>
          {content[1]}
        </pre>
      </div>
    );
  }
  return <KeyValues args={a} skip={[]} />;
}

function KeyValues({ args, skip }: { args: Args; skip: string[] }) {
  return (
    <table class="kv" data-testid="args-table">
      <tbody>
        {Object.entries(args)
          .filter(([k]) => !skip.includes(k))
          .map(([k, v]) => (
            <tr key={k}>
              <th scope="row">{k}</th>
              <td>
                <Value value={v} />
              </td>
            </tr>
          ))}
      </tbody>
    </table>
  );
}

/** A result: text as text (a JSON string is unwrapped once, never shown escaped), else JSON. */
export function ToolResult({ value }: { value: unknown }) {
  let v = value;
  if (typeof v === "string") {
    try {
      const parsed: unknown = JSON.parse(v);
      if (parsed && typeof parsed === "object") v = parsed;
    } catch {
      // plain text
    }
  }
  if (typeof v === "string") return <pre class="code result-text" tabIndex={0}>{v}</pre>;
  return <JsonView value={v} />;
}
