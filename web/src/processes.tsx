/**
 * The session's background processes (the workspace terminal's `background: true`): a small
 * panel above the composer listing them — command, status, pid — with each one's output on
 * demand and a Stop button. It polls `process.list` through the SDK's ProcessPoller, so a session
 * that is gone (4001) stops being polled until the page binds it again; the output of an opened
 * process is paged with `process.output { after_offset }`. Renders nothing while there are none.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { Method, ProcessPoller, type ProcessInfo, type TetherClient } from "../../src/client/index.js";

/** Ended processes still shown under the running ones. */
const KEEP_ENDED = 3;
const OUTPUT_POLL_MS = 2000;

export function ProcessPanel({ client, sessionId }: { client: TetherClient | undefined; sessionId: string }) {
  const [procs, setProcs] = useState<ProcessInfo[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => {
    setProcs([]);
    setOpen(null);
    if (!client) return;
    const poller = new ProcessPoller({ client });
    const stop = poller.watch(sessionId, (p) => setProcs(p));
    return () => {
      stop();
      poller.close();
    };
  }, [client, sessionId]);

  const running = procs.filter((p) => p.status === "running");
  const ended = procs.filter((p) => p.status !== "running").slice(-KEEP_ENDED);
  const shown = [...running, ...ended];
  if (!client || shown.length === 0) return null;

  const kill = async (id: string) => {
    const { process: p } = await client.call(Method.ProcessKill, { session_id: sessionId, id });
    setProcs((all) => all.map((x) => (x.id === id ? p : x)));
  };
  return (
    <section class="process-panel" aria-label="Background processes">
      <div class="process-head">
        Background processes <span class="process-count">{running.length} running</span>
      </div>
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
                <button type="button" class="btn btn-sm" onClick={() => void kill(p.id)}>
                  Stop
                </button>
              )}
            </div>
            {open === p.id && <ProcessOutput client={client} sessionId={sessionId} process={p} />}
          </li>
        ))}
      </ul>
    </section>
  );
}

function statusText(p: ProcessInfo): string {
  if (p.status === "exited") return `exited ${p.exit_code ?? ""}`.trim();
  if (p.status === "killed") return p.signal ? `killed (${p.signal})` : "killed";
  if (p.status === "lost") return "lost (gateway restarted)";
  return `running · pid ${p.pid}`;
}

/** The output so far, paged from the gateway; polled while the process runs. */
function ProcessOutput({ client, sessionId, process: p }: { client: TetherClient; sessionId: string; process: ProcessInfo }) {
  const [text, setText] = useState("");
  const next = useRef(0);
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    next.current = 0;
    setText("");
    const fetchMore = async () => {
      try {
        for (;;) {
          const page = await client.call(Method.ProcessOutput, { session_id: sessionId, id: p.id, after_offset: next.current });
          if (stopped) return;
          if (page.dropped_bytes > 0 && next.current === 0) setText(`[… ${page.dropped_bytes} earlier bytes not kept …]\n`);
          if (page.output) setText((t) => t + page.output);
          const more = page.next_offset > next.current && page.output.length > 0;
          next.current = page.next_offset;
          if (!more || page.next_offset - page.offset < 65_536) break;
        }
      } catch {
        // A dropped link or a session gone: the next tick (or the panel's list) says what is true.
      }
      if (!stopped && p.status === "running") timer = setTimeout(() => void fetchMore(), OUTPUT_POLL_MS);
    };
    void fetchMore();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [client, sessionId, p.id, p.status]);
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
