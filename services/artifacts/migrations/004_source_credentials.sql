-- The credential a git project's repository is cloned and pushed with,
-- sealed like the engine accounts' (bound to tenant and project). The
-- gateway stores and removes it; only engine workers resolve it.

-- +goose Up
CREATE TABLE artifacts.source_credentials (
    tenant_id        uuid        NOT NULL,
    project_id       text        NOT NULL CHECK (length(project_id) BETWEEN 1 AND 128),
    credential       text        NOT NULL CHECK (credential LIKE 'v1:%'), -- a seal envelope, never plaintext
    key_fingerprint  text        NOT NULL,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, project_id)
);

-- +goose Down
DROP TABLE artifacts.source_credentials;
