-- The gateway's part of the tenants' audit log: API keys, users, members,
-- projects (creation, changes, sources and bases, deletion). An entry is
-- written in the transaction of the change it records (pkg/platform/audit).

-- +goose Up
CREATE TABLE gateway.audit_log (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL,
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
CREATE INDEX audit_log_by_tenant ON gateway.audit_log (tenant_id, at DESC, id DESC);

-- +goose Down
DROP TABLE gateway.audit_log;
