-- The artifacts service's part of the tenants' audit log: skills, subagents,
-- instructions, permissions, profiles, project defaults, providers,
-- accounts and source credentials (never a credential itself). An entry is
-- written in the transaction of the change it records (pkg/platform/audit).

-- +goose Up
CREATE TABLE artifacts.audit_log (
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
CREATE INDEX audit_log_by_tenant ON artifacts.audit_log (tenant_id, at DESC, id DESC);

-- +goose Down
DROP TABLE artifacts.audit_log;
