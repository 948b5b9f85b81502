-- Integration accounts: a connection of a tenant (project_id '') or of one
-- of its projects to a provider of the built-in catalog
-- (internal/integrations), its credential sealed like an MCP server's,
-- bound to the tenant and the account's id. An account with the
-- agent-tools capability projects an MCP server row of its scope: it
-- creates the row, or adopts the row of the same slug, keeping what the
-- row was to put it back when the account lets it go.

-- +goose Up
CREATE TABLE artifacts.integration_accounts (
    tenant_id        uuid        NOT NULL,
    project_id       text        NOT NULL DEFAULT '' CHECK (length(project_id) <= 128),
    id               uuid        NOT NULL,
    provider         text        NOT NULL CHECK (length(provider) BETWEEN 1 AND 64),
    label            text        NOT NULL CHECK (length(label) BETWEEN 1 AND 200),
    capabilities     jsonb       NOT NULL DEFAULT '[]',
    server_slug      text        NOT NULL,
    server_url       text        NOT NULL DEFAULT '', -- custom providers only; the catalog's otherwise
    header_name      text        NOT NULL DEFAULT '', -- custom providers only
    credential       text        CHECK (credential LIKE 'v1:%'), -- a seal envelope, never plaintext
    key_fingerprint  text,
    status           text        NOT NULL DEFAULT 'unknown'
                                 CHECK (status IN ('unknown', 'ok', 'needs_auth', 'needs_config', 'error')),
    status_reason    text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, project_id, provider, label)
);

-- The MCP server row an account projects, in the account's scope. server_id
-- is the row's id, kept by an adoption (the row's sealed credential is bound
-- to it). An adopted row's columns as they were are in restore, its sealed
-- credential envelope and key in credential and key_fingerprint, untouched
-- (a key rotation re-seals it for the same row id); a created row has none.
CREATE TABLE artifacts.integration_projections (
    tenant_id        uuid        NOT NULL,
    account_id       uuid        NOT NULL,
    project_id       text        NOT NULL,
    slug             text        NOT NULL,
    server_id        uuid        NOT NULL UNIQUE,
    adopted          boolean     NOT NULL,
    restore          jsonb,
    credential       text        CHECK (credential LIKE 'v1:%'),
    key_fingerprint  text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id),
    UNIQUE (tenant_id, project_id, slug),
    FOREIGN KEY (tenant_id, account_id) REFERENCES artifacts.integration_accounts (tenant_id, id) ON DELETE CASCADE,
    CHECK (adopted = (restore IS NOT NULL)),
    CHECK (adopted OR credential IS NULL)
);

-- +goose Down
DROP TABLE artifacts.integration_projections;
DROP TABLE artifacts.integration_accounts;
