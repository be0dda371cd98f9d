/**
 * The session's background processes (the workspace terminal's `background: true`): one line
 * above the composer ("Background processes 1 running"), which opens into the list — command,
 * status, pid — with each one's output on demand and a Stop button. Closed by default, so the
 * processes never take the transcript's height unasked (#33). The list is the SDK's SessionView's (`process.list` when the session
 * opens, then the `process.*` frames: no poll of its own); an opened process's output is paged
 * with `process.output { after_offset }`, read again when its frames say there is more.
 * Renders nothing while there are none.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { Method, type ProcessInfo, type TetherClient } from "../../src/client/index.js";
import type { AppController } from "./controller.js";
import { Icon } from "./icons.js";

/** Ended processes still shown under the running ones. */
const KEEP_ENDED = 3;

export function ProcessPanel({ ctl, sessionId }: { ctl: AppController; sessionId: string }) {
  const [open, setOpen] = useState<string | null>(null);
  const [expanded, setExpanded] = useState(false);
  useEffect(() => {
    setOpen(null);
    setExpanded(false);
  }, [sessionId]);
  const procs = ctl.processes;
  const client = ctl.sdk;
  const running = procs.filter((p) => p.status === "running");
  const ended = procs.filter((p) => p.status !== "running").slice(-KEEP_ENDED);
  const shown = [...running, ...ended];
  if (!client || shown.length === 0) return null;

  return (
    <section class="process-panel" aria-label="Background processes">
      <button type="button" class="process-head" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
        <Icon name={expanded ? "caret" : "next"} size={14} /> Background processes <span class="process-count">{running.length} running</span>
      </button>
      {expanded && (
        <ul>
          {shown.map((p) => (
            <li key={p.id} class="process" data-process-id={p.id} data-status={p.status}>
              <div class="process-row">
                <code class="process-command" title={p.cwd}>
                  {p.command}
                </code>
                <span class="process-status">{statusText(p)}</span>
                <button type="button" class="btn btn-sm" onClick={() => setOpen(open === p.id ? null : p.id)}>
                  {open === p.id ? "Hide" : "Output"}
                </button>
                {p.status === "running" && (
                  <button type="button" class="btn btn-sm" onClick={() => void ctl.killProcess(p.id)}>
                    Stop
                  </button>
                )}
              </div>
              {open === p.id && <ProcessOutput client={client} sessionId={sessionId} process={p} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function statusText(p: ProcessInfo): string {
  if (p.status === "exited") return `exited ${p.exit_code ?? ""}`.trim();
  if (p.status === "killed") return p.signal ? `killed (${p.signal})` : "killed";
  if (p.status === "lost") return "lost (gateway restarted)";
  return `running · pid ${p.pid}`;
}

/**
 * The output so far, paged from the gateway from where the last read ended. Read again whenever
 * the view's copy of the process changes (a `process.output` frame grew its tail, or it ended):
 * the frames say when, the pages say what, each byte once.
 */
function ProcessOutput({ client, sessionId, process: p }: { client: TetherClient; sessionId: string; process: ProcessInfo }) {
  const [text, setText] = useState("");
  const next = useRef(0);
  const reading = useRef<{ again: boolean } | undefined>(undefined);
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    next.current = 0;
    setText("");
    // Unmounted (Hide) or another process: a read in flight drops its answer.
    return () => void (reading.current = undefined);
  }, [sessionId, p.id]);
  useEffect(() => {
    if (reading.current) {
      reading.current.again = true;
      return;
    }
    const run = { again: false };
    reading.current = run;
    const fetchMore = async () => {
      try {
        for (;;) {
          run.again = false;
          const page = await client.call(Method.ProcessOutput, { session_id: sessionId, id: p.id, after_offset: next.current });
          if (reading.current !== run) return;
          if (page.dropped_bytes > 0 && next.current === 0) setText(`[… ${page.dropped_bytes} earlier bytes not kept …]\n`);
          if (page.output) setText((t) => t + page.output);
          const full = page.next_offset - page.offset >= 65_536;
          next.current = page.next_offset;
          if (!full && !run.again) break;
        }
      } catch {
        // A dropped link or a session gone: the view's next change reads again.
      }
      if (reading.current === run) reading.current = undefined;
    };
    void fetchMore();
  }, [client, sessionId, p.id, p.status, p.output_tail]);
  useEffect(() => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [text]);
  return (
    <pre class="process-output" ref={pre} aria-label={`Output of ${p.command}`}>
      {text || "(no output yet)"}
    </pre>
  );
}
