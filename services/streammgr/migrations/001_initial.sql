-- streammgr owns chat sessions, their messages, runs and the event log.
-- Nothing outside streammgr reads these tables; tenant_id is on every row a
-- request can reach, and every query filters by it.

-- +goose Up
CREATE TABLE streammgr.chat_sessions (
    id                uuid        PRIMARY KEY,
    tenant_id         uuid        NOT NULL,
    project_id        uuid        NOT NULL,
    title             text        NOT NULL DEFAULT '',
    -- the engine selection, persisted when chosen and again at each turn
    engine            text        NOT NULL DEFAULT 'scripted',
    provider          text        NOT NULL DEFAULT '',
    model_id          text        NOT NULL DEFAULT '',
    model_name        text        NOT NULL DEFAULT '',
    account_id        text        NOT NULL DEFAULT '',
    account_name      text        NOT NULL DEFAULT '',
    reasoning_effort  text,
    profile_id        text,
    head_session_id   text,        -- the engine's own session id of the newest turn
    head_message_id   uuid,        -- HEAD of the messages DAG
    head_title        text        NOT NULL DEFAULT '',  -- last user text, 80 chars
    head_summary      text        NOT NULL DEFAULT '',  -- last assistant text, 200 chars, fences stripped
    message_count     integer     NOT NULL DEFAULT 0,
    user_count        integer     NOT NULL DEFAULT 0,
    last_message_at   timestamptz,
    active_run_id     uuid,
    chat_cursor       bigint      NOT NULL DEFAULT 0,  -- CHAT sequence up to which the projections are committed
    created_by        uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_sessions_by_project ON streammgr.chat_sessions (tenant_id, project_id, created_at DESC);

CREATE TABLE streammgr.runs (
    id                 uuid        PRIMARY KEY,
    tenant_id          uuid        NOT NULL,
    session_id         uuid        NOT NULL REFERENCES streammgr.chat_sessions (id) ON DELETE CASCADE,
    project_id         uuid        NOT NULL,
    state              text        NOT NULL CHECK (state IN ('queued', 'claimed', 'running', 'awaiting_input',
                                   'cancelling', 'completed', 'failed', 'cancelled', 'lost')),
    engine             text        NOT NULL,
    model              text        NOT NULL DEFAULT '',
    reasoning_effort   text,
    profile_id         text,
    job                jsonb       NOT NULL,   -- the job as dispatched (engine prompt included)
    user_message_id    uuid,
    requested_by       uuid,
    sender_name        text        NOT NULL DEFAULT '',
    client_request_id  text,                   -- idempotency key of the send that created it
    resume_session_id  text,
    engine_session_id  text,
    worker_id          text,
    epoch              bigint      NOT NULL DEFAULT 0,  -- run_owner revision of the current owner
    last_seq           bigint      NOT NULL DEFAULT 0,  -- highest seq stored for epoch
    error              text,
    error_kind         text,
    usage              jsonb,
    cost_usd           double precision,
    num_turns          integer,
    artifact_revision  bigint,
    queued_at          timestamptz NOT NULL DEFAULT now(),
    dispatched_at      timestamptz,            -- null while waiting behind the session's active run
    claimed_at         timestamptz,
    first_output_at    timestamptz,
    ended_at           timestamptz
);
CREATE INDEX runs_by_session ON streammgr.runs (session_id, queued_at);
CREATE UNIQUE INDEX runs_by_client_request ON streammgr.runs (session_id, client_request_id) WHERE client_request_id IS NOT NULL;
CREATE INDEX runs_by_tenant ON streammgr.runs (tenant_id, queued_at DESC);
CREATE INDEX runs_unfinished ON streammgr.runs (state) WHERE state NOT IN ('completed', 'failed', 'cancelled', 'lost');

-- The event log: the truth every projection is rebuilt from.
-- epoch 0 holds what streammgr itself recorded before any worker owned the run
-- (the user message); epochs >= 1 are run_owner revisions.
CREATE TABLE streammgr.run_events (
    run_id      uuid        NOT NULL,
    epoch       bigint      NOT NULL,
    seq         bigint      NOT NULL,
    js_seq      bigint,                 -- EVENTS stream sequence; null when written directly by streammgr
    type        text        NOT NULL,
    payload     jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, epoch, seq)
);

-- Messages of a chat session: a DAG whose parent is the session HEAD at save time.
CREATE TABLE streammgr.messages (
    id                 uuid        PRIMARY KEY,  -- derived from (run, epoch, seq): a replay lands on the same row
    tenant_id          uuid        NOT NULL,
    session_id         uuid        NOT NULL REFERENCES streammgr.chat_sessions (id) ON DELETE CASCADE,
    run_id             uuid,
    parent_message_id  uuid,
    type               text        NOT NULL,
    data               jsonb       NOT NULL,   -- the unified message
    created_at         timestamptz NOT NULL DEFAULT now(),
    is_deleted         boolean     NOT NULL DEFAULT false
);
CREATE INDEX messages_by_session ON streammgr.messages (session_id, created_at, id);

-- Latest rate-limit report per (tenant, engine, account), replayed when a client joins.
CREATE TABLE streammgr.rate_limits (
    tenant_id   uuid        NOT NULL,
    engine      text        NOT NULL,
    account_id  text        NOT NULL,
    payload     jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, engine, account_id)
);

-- +goose Down
DROP TABLE streammgr.rate_limits;
DROP TABLE streammgr.messages;
DROP TABLE streammgr.run_events;
DROP TABLE streammgr.runs;
DROP TABLE streammgr.chat_sessions;
