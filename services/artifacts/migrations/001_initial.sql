-- artifacts owns skills, subagents, instructions, permission sets, profiles
-- and engine accounts. This first migration holds the revision counter every
-- artifact change bumps; the stores arrive in the following migrations.

-- +goose Up
CREATE TABLE artifacts.revisions (
    tenant_id   uuid        PRIMARY KEY,
    revision    bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE artifacts.revisions;
