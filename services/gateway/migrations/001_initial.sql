-- gateway owns identity and tenancy: tenants, their users, API keys and
-- projects, and who is a member of which project. Every row below a tenant
-- carries tenant_id, and the composite foreign keys make it impossible to
-- link rows of two tenants (a key of tenant A for a user of tenant B, a
-- membership joining A's project to B's user).

-- +goose Up
CREATE TABLE gateway.tenants (
    id          uuid        PRIMARY KEY,
    slug        text        NOT NULL UNIQUE,
    name        text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gateway.users (
    id          uuid        PRIMARY KEY,
    tenant_id   uuid        NOT NULL REFERENCES gateway.tenants (id) ON DELETE CASCADE,
    email       text        NOT NULL,
    name        text        NOT NULL,
    role        text        NOT NULL CHECK (role IN ('admin', 'member')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, email),
    UNIQUE (tenant_id, id)
);

-- The secret itself is never stored: only its SHA-256 and a short prefix for display.
CREATE TABLE gateway.api_keys (
    id            uuid        PRIMARY KEY,
    tenant_id     uuid        NOT NULL REFERENCES gateway.tenants (id) ON DELETE CASCADE,
    user_id       uuid        NOT NULL,
    name          text        NOT NULL DEFAULT '',
    prefix        text        NOT NULL,
    hash          bytea       NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    expires_at    timestamptz,
    revoked_at    timestamptz,
    FOREIGN KEY (tenant_id, user_id) REFERENCES gateway.users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX api_keys_by_user ON gateway.api_keys (tenant_id, user_id);

CREATE TABLE gateway.projects (
    id                  uuid        PRIMARY KEY,
    tenant_id           uuid        NOT NULL REFERENCES gateway.tenants (id) ON DELETE CASCADE,
    name                text        NOT NULL,
    default_profile_id  text,
    created_by          uuid,
    created_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name),
    UNIQUE (tenant_id, id)
);

CREATE TABLE gateway.memberships (
    project_id  uuid        NOT NULL,
    user_id     uuid        NOT NULL,
    tenant_id   uuid        NOT NULL REFERENCES gateway.tenants (id) ON DELETE CASCADE,
    role        text        NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'member')),
    joined_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id),
    FOREIGN KEY (tenant_id, project_id) REFERENCES gateway.projects (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES gateway.users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX memberships_by_user ON gateway.memberships (tenant_id, user_id);

-- +goose Down
DROP TABLE gateway.memberships;
DROP TABLE gateway.projects;
DROP TABLE gateway.api_keys;
DROP TABLE gateway.users;
DROP TABLE gateway.tenants;
