-- A project's memory: named notes its agents keep across sessions, written
-- and read through the bridge's memory tools. Every row and every query is
-- scoped by tenant and project.

-- +goose Up
CREATE TABLE mcpbridge.memory (
    tenant_id   uuid        NOT NULL,
    project_id  uuid        NOT NULL,
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    content     text        NOT NULL,
    run_id      text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, project_id, name)
);

-- +goose Down
DROP TABLE mcpbridge.memory;
