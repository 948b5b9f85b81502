-- The shape of every service's audit table; a service's migration creates it
-- in its own schema (replace "audit_test" with the schema's name).
CREATE TABLE audit_test.audit_log (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL,
    -- clock_timestamp, not now(): the entries of one transaction keep the
    -- order they were made in.
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_id     text        NOT NULL,
    actor_name   text        NOT NULL,
    action       text        NOT NULL,
    target_type  text        NOT NULL,
    target_id    text        NOT NULL,
    target_name  text        NOT NULL DEFAULT '',
    before       jsonb,
    after        jsonb
);
CREATE INDEX audit_log_by_tenant ON audit_test.audit_log (tenant_id, at DESC, id DESC);
