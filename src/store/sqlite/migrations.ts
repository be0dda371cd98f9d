/**
 * Numbered schema migrations, run in order at open inside one transaction each. A migration is
 * never edited once released: add the next number instead.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "core tables",
    sql: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        profile TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        parent_session_id TEXT,
        model TEXT NOT NULL,
        provider TEXT NOT NULL,
        model_config TEXT NOT NULL DEFAULT '{}',
        flags TEXT NOT NULL DEFAULT '{}',
        todo TEXT NOT NULL DEFAULT '{"revision":0,"items":[]}',
        started_at INTEGER NOT NULL,
        last_activity_at INTEGER NOT NULL,
        ended_at INTEGER,
        end_reason TEXT,
        seq_reserved INTEGER NOT NULL DEFAULT 0,
        active_turn TEXT
      );
      CREATE INDEX sessions_by_activity ON sessions (principal, last_activity_at DESC, id DESC);
      CREATE INDEX sessions_open ON sessions (ended_at) WHERE ended_at IS NULL;

      CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        tool_calls TEXT,
        tool_call_id TEXT,
        display_kind TEXT,
        display_metadata TEXT,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        created_seq INTEGER NOT NULL
      );
      CREATE INDEX messages_by_session ON messages (session_id, created_seq);

      CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        turn_id TEXT,
        trace_id TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
      ) WITHOUT ROWID;

      CREATE TABLE idempotency (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, request_id)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: "http api: responses and idempotency keys",
    sql: `
      CREATE TABLE responses (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        after_seq INTEGER NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL,
        background INTEGER NOT NULL DEFAULT 0,
        stored INTEGER NOT NULL DEFAULT 1,
        previous_response_id TEXT,
        instructions TEXT,
        metadata TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        result TEXT,
        created_at INTEGER NOT NULL,
        completed_at INTEGER
      );
      CREATE INDEX responses_by_session ON responses (session_id);

      CREATE TABLE http_idempotency (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        owner TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (principal, key)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: "lifecycle: process heartbeats and session ownership leases",
    sql: `
      CREATE TABLE heartbeats (
        id TEXT PRIMARY KEY,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        last_beat INTEGER NOT NULL
      );
      CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        detached INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX leases_by_owner ON leases (owner);
    `,
  },
  {
    version: 4,
    name: "delegations: background sub-agents and their delivery claims",
    sql: `
      CREATE TABLE delegations (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        origin_session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        tasks TEXT NOT NULL,
        status TEXT NOT NULL,
        owner TEXT NOT NULL,
        claimed_by TEXT,
        claim_expires_at INTEGER,
        attempts INTEGER NOT NULL DEFAULT 0,
        delivered_session_id TEXT,
        delivered_message_id TEXT,
        created_at INTEGER NOT NULL,
        completed_at INTEGER,
        delivered_at INTEGER
      );
      CREATE INDEX delegations_by_origin ON delegations (origin_session_id, created_at);
      CREATE INDEX delegations_undelivered ON delegations (status) WHERE status <> 'delivered';
    `,
  },
  {
    version: 5,
    name: "delegations: resumable after a restart (task context, resume count)",
    sql: `
      ALTER TABLE delegations ADD COLUMN context TEXT;
      ALTER TABLE delegations ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 6,
    name: "retention: ended sessions by end time",
    sql: `
      CREATE INDEX sessions_ended ON sessions (ended_at) WHERE ended_at IS NOT NULL;
    `,
  },
  {
    version: 7,
    name: "requests: open requests of turns (approvals, input) and stored always-approvals",
    sql: `
      CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        call_id TEXT,
        tool TEXT,
        ordinal INTEGER NOT NULL,
        payload TEXT NOT NULL,
        rerunnable INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL,
        choice TEXT,
        resolved_by TEXT,
        reason TEXT,
        note TEXT,
        answer TEXT,
        created_at INTEGER NOT NULL,
        resolved_at INTEGER
      );
      CREATE INDEX requests_unfinished ON requests (session_id, created_at) WHERE status <> 'done';
      CREATE INDEX requests_session_choice ON requests (session_id) WHERE choice = 'session';
      CREATE TABLE approvals (
        principal TEXT NOT NULL,
        tool TEXT NOT NULL,
        by TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (principal, tool)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 9,
    name: "processes: background processes of sessions (the workspace terminal)",
    sql: `
      CREATE TABLE processes (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        command TEXT NOT NULL,
        cwd TEXT NOT NULL,
        pid INTEGER NOT NULL,
        status TEXT NOT NULL,
        exit_code INTEGER,
        signal TEXT,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        output_tail TEXT NOT NULL DEFAULT '',
        owner TEXT NOT NULL
      );
      CREATE INDEX processes_by_session ON processes (session_id, started_at);
    `,
  },
  {
    version: 10,
    name: "delta log: the streamed text of messages still streaming, compacted at message.complete",
    sql: `
      -- A rowid table with no index, on purpose: rows are appended at the B-tree's right edge, so
      -- a commit carrying one row for each of N streaming sessions dirties a page or two, not N
      -- (keyed by session, each row landed on a page of its own: ~4 KiB of WAL per delta). The
      -- log of completed messages is dropped in sweeps (apply-ops.ts, DeltaLogSweep).
      CREATE TABLE message_deltas (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        text TEXT NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: "runs: /v1/runs records and X-Session-Key bindings",
    sql: `
      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        after_seq INTEGER NOT NULL,
        model TEXT NOT NULL,
        session_key TEXT,
        status TEXT NOT NULL,
        stop_requested INTEGER NOT NULL DEFAULT 0,
        result TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX runs_by_session ON runs (session_id);
      CREATE TABLE run_session_keys (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        session_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (principal, key)
      ) WITHOUT ROWID;
      CREATE INDEX run_session_keys_by_session ON run_session_keys (session_id);
    `,
  },
  {
    version: 12,
    name: "agent outbox: envelopes of message_agent, their claims and replies",
    sql: `
      CREATE TABLE agent_envelopes (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        from_session_id TEXT NOT NULL,
        from_profile TEXT NOT NULL,
        from_name TEXT NOT NULL,
        to_address TEXT NOT NULL,
        to_name TEXT NOT NULL,
        peer TEXT,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        claimed_by TEXT,
        claim_expires_at INTEGER,
        last_error TEXT,
        recipient_session_id TEXT,
        recipient_turn_id TEXT,
        reply TEXT,
        created_at INTEGER NOT NULL,
        sent_at INTEGER,
        replied_at INTEGER,
        delivered_at INTEGER,
        delivered_session_id TEXT,
        delivered_message_id TEXT
      );
      CREATE INDEX agent_envelopes_by_sender ON agent_envelopes (from_session_id, created_at);
      CREATE INDEX agent_envelopes_moving ON agent_envelopes (next_attempt_at) WHERE status IN ('pending', 'sent', 'replied');
    `,
  },
  {
    version: 13,
    name: "delta log: indexed by (bucket, message, seq), and messages still streaming by session",
    sql: `
      -- A reader of a streaming message's text scanned the whole log (every live stream's rows).
      -- Why the index leads with a bucket and not the message: appends.ts.
      ALTER TABLE message_deltas ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX message_deltas_by_bucket ON message_deltas (bucket, message_id, seq);
      CREATE INDEX messages_streaming ON messages (session_id) WHERE status = 'streaming';
    `,
  },
  {
    version: 14,
    name: "branching: versions of a user message and the messages off the active branch",
    sql: `
      ALTER TABLE messages ADD COLUMN branch_of TEXT;
      ALTER TABLE messages ADD COLUMN hidden_by TEXT;
      CREATE INDEX messages_hidden ON messages (session_id, hidden_by) WHERE hidden_by IS NOT NULL;
      CREATE INDEX messages_versions ON messages (session_id, branch_of) WHERE branch_of IS NOT NULL;
    `,
  },
  {
    version: 15,
    name: "requests: the deadline of an open approval as a column, so a gateway finds the expired ones itself",
    sql: `
      -- tools.approval_timeout_s is stored in the request's payload (expires_at); the recovery sweep
      -- looks the due ones up by this column, including those of sessions nobody has open.
      ALTER TABLE requests ADD COLUMN expires_at INTEGER;
      UPDATE requests SET expires_at = json_extract(payload, '$.expires_at') WHERE status = 'open';
      CREATE INDEX requests_expiring ON requests (expires_at) WHERE status = 'open' AND expires_at IS NOT NULL;
    `,
  },
  {
    version: 16,
    name: "A2A tasks in the store, owned by a principal; an envelope's reply says whether it is whole",
    sql: `
      -- One row per A2A task of a bot: the SDK's Task as JSON, its principal and bot (a lookup by
      -- another principal or bot finds nothing), and while unfinished the process working on it
      -- and when that claim lapses (a restarted gateway takes it up then).
      CREATE TABLE a2a_tasks (
        id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        bot TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        body TEXT NOT NULL,
        owner TEXT,
        claim_expires_at INTEGER,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX a2a_tasks_unfinished ON a2a_tasks (claim_expires_at) WHERE state NOT IN ('completed', 'failed', 'canceled', 'rejected');
      CREATE INDEX a2a_tasks_finished ON a2a_tasks (updated_at) WHERE state IN ('completed', 'failed', 'canceled', 'rejected');
      -- complete | interrupted | failed: a reply cut short says so; reanswers counts the recipient's
      -- turns started again after a restart cut its answer.
      ALTER TABLE agent_envelopes ADD COLUMN reply_status TEXT;
      ALTER TABLE agent_envelopes ADD COLUMN reanswers INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 17,
    name: "responses: what the request asked (tools, tool_choice, sampling), echoed by the Response",
    sql: `
      -- JSON of the request's tools, tool_choice, parallel_tool_calls and sampling parameters: a
      -- Response read back (after a restart too) shows what was asked, not defaults.
      ALTER TABLE responses ADD COLUMN echo TEXT;
    `,
  },
  {
    version: 18,
    name: "queued prompts: a prompt queued behind a running turn is stored until it starts",
    sql: `
      -- One row per prompt accepted into a session's turn queue and not started yet: removed in the
      -- transaction that writes its turn.start (or when it is dropped). After a crash the recovery
      -- sweep opens the sessions that have rows and runs them in position order.
      CREATE TABLE queued_turns (
        turn_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        trace_id TEXT NOT NULL,
        text TEXT NOT NULL,
        request_id TEXT,
        extra TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX queued_turns_session ON queued_turns (session_id, position);
      `,
    },
    {
    version: 19,
    name: "attachments: blobs stored once by sha256, referenced by messages' parts",
    sql: `
      -- The bytes of images, files and audio, once per sha256 whoever sent them. A blob is served
      -- only to principals whose sessions reference it (blob_refs joined to sessions).
      CREATE TABLE blobs (
        sha256 TEXT PRIMARY KEY,
        media_type TEXT NOT NULL,
        size INTEGER NOT NULL,
        data BLOB NOT NULL,
        created_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE TABLE blob_refs (
        sha256 TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (sha256, session_id, message_id)
      ) WITHOUT ROWID;
      CREATE INDEX blob_refs_by_session ON blob_refs (session_id);
      -- JSON of a message's parts when it has more than text (parts.ts); null: text only.
      ALTER TABLE messages ADD COLUMN parts TEXT;
    `,
  },
];
