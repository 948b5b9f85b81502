-- External MCP servers a tenant (project_id '') or one of its projects
-- attaches. Their env (stdio) and headers (http) are one JSON object sealed
-- like the engine accounts' credentials, bound to the tenant and the row's
-- id; only their names are kept in clear.

-- +goose Up
CREATE TABLE artifacts.mcp_servers (
    tenant_id        uuid        NOT NULL,
    project_id       text        NOT NULL DEFAULT '' CHECK (length(project_id) <= 128),
    slug             text        NOT NULL,
    id               uuid        NOT NULL UNIQUE,
    name             text        NOT NULL,
    transport        text        NOT NULL CHECK (transport IN ('stdio', 'http')),
    url              text        NOT NULL DEFAULT '',
    command          text        NOT NULL DEFAULT '',
    args             jsonb       NOT NULL DEFAULT '[]',
    env_names        jsonb       NOT NULL DEFAULT '[]',
    header_names     jsonb       NOT NULL DEFAULT '[]',
    credential       text        CHECK (credential LIKE 'v1:%'), -- a seal envelope, never plaintext
    key_fingerprint  text,
    exposure         jsonb       NOT NULL DEFAULT '{}',
    enabled          boolean     NOT NULL DEFAULT true,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, project_id, slug),
    CHECK (transport = 'http' AND url <> '' AND command = '' OR transport = 'stdio' AND command <> '' AND url = '')
);

-- +goose Down
DROP TABLE artifacts.mcp_servers;
