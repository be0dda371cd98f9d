/**
 * PostgreSQL schema migrations, numbered like SQLite's (src/store/sqlite/migrations.ts) and
 * equivalent to them: the same tables, BIGINT for ms timestamps and seqs, BOOLEAN for flags, byte
 * order (COLLATE "C", as SQLite compares) for the ids that order pages, and TEXT for JSON columns —
 * event payloads are spliced into wire JSON as stored, so they must come back byte for byte (JSONB
 * would reorder keys and reformat). A migration is never edited once released.
 */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    name: "core tables",
    sql: `
      CREATE TABLE sessions (
        id TEXT COLLATE "C" PRIMARY KEY,
        principal TEXT NOT NULL,
        profile TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        parent_session_id TEXT,
        model TEXT NOT NULL,
        provider TEXT NOT NULL,
        model_config TEXT NOT NULL DEFAULT '{}',
        flags TEXT NOT NULL DEFAULT '{}',
        todo TEXT NOT NULL DEFAULT '{"revision":0,"items":[]}',
        started_at BIGINT NOT NULL,
        last_activity_at BIGINT NOT NULL,
        ended_at BIGINT,
        end_reason TEXT,
        seq_reserved BIGINT NOT NULL DEFAULT 0,
        active_turn TEXT
      );
      CREATE INDEX sessions_by_activity ON sessions (principal, last_activity_at DESC, id DESC);
      CREATE INDEX sessions_open ON sessions (id) WHERE ended_at IS NULL;

      CREATE TABLE messages (
        id TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        tool_calls TEXT,
        tool_call_id TEXT,
        display_kind TEXT,
        display_metadata TEXT,
        status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        created_seq BIGINT NOT NULL
      );
      CREATE INDEX messages_by_session ON messages (session_id, created_seq, id);

      CREATE TABLE events (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        turn_id TEXT,
        trace_id TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, seq)
      );

      CREATE TABLE idempotency (
        session_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (session_id, request_id)
      );
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
        after_seq BIGINT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL,
        background BOOLEAN NOT NULL DEFAULT FALSE,
        stored BOOLEAN NOT NULL DEFAULT TRUE,
        previous_response_id TEXT,
        instructions TEXT,
        metadata TEXT,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        result TEXT,
        created_at BIGINT NOT NULL,
        completed_at BIGINT
      );
      CREATE INDEX responses_by_session ON responses (session_id);

      CREATE TABLE http_idempotency (
        principal TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        owner TEXT NOT NULL,
        status INTEGER,
        body TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (principal, key)
      );
    `,
  },
  {
    version: 3,
    name: "lifecycle: process heartbeats and session ownership leases",
    sql: `
      CREATE TABLE heartbeats (
        id TEXT COLLATE "C" PRIMARY KEY,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        last_beat BIGINT NOT NULL
      );
      CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        detached BOOLEAN NOT NULL DEFAULT FALSE
      );
      CREATE INDEX leases_by_owner ON leases (owner);
    `,
  },
  {
    version: 4,
    name: "delegations: background sub-agents and their delivery claims",
    sql: `
      CREATE TABLE delegations (
        id TEXT COLLATE "C" PRIMARY KEY,
        principal TEXT NOT NULL,
        origin_session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        tasks TEXT NOT NULL,
        status TEXT NOT NULL,
        owner TEXT NOT NULL,
        claimed_by TEXT,
        claim_expires_at BIGINT,
        attempts INTEGER NOT NULL DEFAULT 0,
        delivered_session_id TEXT,
        delivered_message_id TEXT,
        created_at BIGINT NOT NULL,
        completed_at BIGINT,
        delivered_at BIGINT
      );
      CREATE INDEX delegations_by_origin ON delegations (origin_session_id, created_at);
      CREATE INDEX delegations_undelivered ON delegations (status) WHERE status <> 'delivered';
    `,
  },
  {
    version: 5,
    name: "delegations: resumable after a restart (task context, resume count)",
    sql: `
      ALTER TABLE delegations ADD COLUMN context TEXT, ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
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
        id TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL,
        turn_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        call_id TEXT,
        tool TEXT,
        ordinal INTEGER NOT NULL,
        payload TEXT NOT NULL,
        rerunnable BOOLEAN NOT NULL DEFAULT FALSE,
        status TEXT NOT NULL,
        choice TEXT,
        resolved_by TEXT,
        reason TEXT,
        note TEXT,
        answer TEXT,
        created_at BIGINT NOT NULL,
        resolved_at BIGINT
      );
      CREATE INDEX requests_unfinished ON requests (session_id, created_at) WHERE status <> 'done';
      CREATE INDEX requests_session_choice ON requests (session_id) WHERE choice = 'session';
      CREATE TABLE approvals (
        principal TEXT COLLATE "C" NOT NULL,
        tool TEXT COLLATE "C" NOT NULL,
        by TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (principal, tool)
      );
    `,
  },
  {
    version: 9,
    name: "processes: background processes of sessions (the workspace terminal)",
    sql: `
      CREATE TABLE processes (
        id TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL,
        command TEXT NOT NULL,
        cwd TEXT NOT NULL,
        pid INTEGER NOT NULL,
        status TEXT NOT NULL,
        exit_code INTEGER,
        signal TEXT,
        started_at BIGINT NOT NULL,
        ended_at BIGINT,
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
      CREATE TABLE message_deltas (
        session_id TEXT COLLATE "C" NOT NULL,
        message_id TEXT COLLATE "C" NOT NULL,
        seq BIGINT NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (session_id, message_id, seq)
      );
    `,
  },
  {
    version: 11,
    name: "runs: /v1/runs records and X-Session-Key bindings",
    sql: `
      CREATE TABLE runs (
        id TEXT COLLATE "C" PRIMARY KEY,
        principal TEXT COLLATE "C" NOT NULL,
        session_id TEXT COLLATE "C" NOT NULL,
        turn_id TEXT NOT NULL,
        after_seq BIGINT NOT NULL,
        model TEXT NOT NULL,
        session_key TEXT,
        status TEXT NOT NULL,
        stop_requested BOOLEAN NOT NULL DEFAULT FALSE,
        result TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX runs_by_session ON runs (session_id);
      CREATE TABLE run_session_keys (
        principal TEXT COLLATE "C" NOT NULL,
        key TEXT COLLATE "C" NOT NULL,
        session_id TEXT COLLATE "C" NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (principal, key)
      );
      CREATE INDEX run_session_keys_by_session ON run_session_keys (session_id);
    `,
  },
  {
    version: 12,
    name: "agent outbox: envelopes of message_agent, their claims and replies",
    sql: `
      CREATE TABLE agent_envelopes (
        id TEXT COLLATE "C" PRIMARY KEY,
        principal TEXT NOT NULL,
        from_session_id TEXT COLLATE "C" NOT NULL,
        from_profile TEXT NOT NULL,
        from_name TEXT NOT NULL,
        to_address TEXT NOT NULL,
        to_name TEXT NOT NULL,
        peer TEXT,
        text TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        claimed_by TEXT,
        claim_expires_at BIGINT,
        last_error TEXT,
        recipient_session_id TEXT,
        recipient_turn_id TEXT,
        reply TEXT,
        created_at BIGINT NOT NULL,
        sent_at BIGINT,
        replied_at BIGINT,
        delivered_at BIGINT,
        delivered_session_id TEXT,
        delivered_message_id TEXT
      );
      CREATE INDEX agent_envelopes_by_sender ON agent_envelopes (from_session_id, created_at);
      CREATE INDEX agent_envelopes_moving ON agent_envelopes (next_attempt_at) WHERE status IN ('pending', 'sent', 'replied');
    `,
  },
  {
    version: 13,
    name: "a commit of appends alone is one statement: its fence check raises from inside it",
    sql: `
      -- Called by the one-statement commit (appends.ts) for a lease.fence whose owner or token no
      -- longer matches: raising aborts the statement, so nothing of the batch is written.
      CREATE FUNCTION tether_fence_refused(session_id TEXT, token BIGINT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'stale owner: lease of session % is no longer held with token %', session_id, token
          USING ERRCODE = 'TF001', DETAIL = session_id, HINT = token::text;
      END $$;
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
      ALTER TABLE requests ADD COLUMN expires_at BIGINT;
      UPDATE requests SET expires_at = (payload::jsonb ->> 'expires_at')::BIGINT WHERE status = 'open';
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
        id TEXT COLLATE "C" PRIMARY KEY,
        principal TEXT COLLATE "C" NOT NULL,
        bot TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        body TEXT NOT NULL,
        owner TEXT,
        claim_expires_at BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
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
        turn_id TEXT COLLATE "C" PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL,
        position BIGINT NOT NULL,
        trace_id TEXT NOT NULL,
        text TEXT NOT NULL,
        request_id TEXT,
        extra TEXT,
        created_at BIGINT NOT NULL
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
        size BIGINT NOT NULL,
        data BYTEA NOT NULL,
        created_at BIGINT NOT NULL
      );
      CREATE TABLE blob_refs (
        sha256 TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        PRIMARY KEY (sha256, session_id, message_id)
      );
      CREATE INDEX blob_refs_by_session ON blob_refs (session_id);
      -- JSON of a message's parts when it has more than text (parts.ts); null: text only.
      ALTER TABLE messages ADD COLUMN parts TEXT;
    `,
  },
];
