-- Events that could not be stored: Postgres refused the event or one of its
-- projections for what it holds (a NUL character in jsonb text, a value a
-- constraint rejects), so the writer set it aside instead of retrying it
-- forever. The run's state changes were applied without its content where
-- possible; the payload is kept as it arrived, for an operator.

-- +goose Up
CREATE TABLE streammgr.dead_events (
    run_id      uuid        NOT NULL,
    epoch       bigint      NOT NULL,
    seq         bigint      NOT NULL,
    tenant_id   uuid        NOT NULL,
    session_id  uuid        NOT NULL,
    js_seq      bigint,                 -- EVENTS stream sequence; null for streammgr's own events
    type        text        NOT NULL,
    payload     bytea       NOT NULL,   -- the output as it arrived: it may not be valid jsonb
    error       text        NOT NULL,   -- why it could not be stored
    projected   boolean     NOT NULL,   -- whether its run state changes were applied without its content
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, epoch, seq)
);
CREATE INDEX dead_events_by_session ON streammgr.dead_events (session_id);
CREATE INDEX dead_events_by_tenant ON streammgr.dead_events (tenant_id, created_at DESC);

-- +goose Down
DROP TABLE streammgr.dead_events;
