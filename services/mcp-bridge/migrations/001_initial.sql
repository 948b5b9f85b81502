-- mcp-bridge owns the MCP servers a tenant has configured and their per-engine
-- tool exposure.

-- +goose Up
CREATE TABLE mcpbridge.servers (
    id              uuid        PRIMARY KEY,
    tenant_id       uuid        NOT NULL,
    slug            text        NOT NULL,
    name            text        NOT NULL,
    transport       text        NOT NULL CHECK (transport IN ('http', 'stdio')),
    url             text,
    command         text,
    args            jsonb       NOT NULL DEFAULT '[]',
    sealed_env      bytea,
    sealed_headers  bytea,
    tool_overrides  jsonb       NOT NULL DEFAULT '{}',
    is_enabled      boolean     NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, slug)
);

-- +goose Down
DROP TABLE mcpbridge.servers;
