-- Sign-ins to remote MCP servers started and not yet completed (the
-- mcpoauth pending records: the PKCE verifier and the server's client),
-- each sealed like a credential, bound to its tenant and nonce. A record is
-- taken once by the callback, or dropped after it expires.

-- +goose Up
CREATE TABLE artifacts.mcp_oauth_pending (
    nonce            text        PRIMARY KEY CHECK (length(nonce) BETWEEN 1 AND 128),
    tenant_id        text        NOT NULL CHECK (length(tenant_id) BETWEEN 1 AND 128),
    credential       text        NOT NULL CHECK (credential LIKE 'v1:%'), -- a seal envelope, never plaintext
    key_fingerprint  text        NOT NULL,
    expires_at       timestamptz NOT NULL
);
CREATE INDEX mcp_oauth_pending_expires ON artifacts.mcp_oauth_pending (expires_at);

-- +goose Down
DROP TABLE artifacts.mcp_oauth_pending;
