-- The artifact stores. Every table has tenant_id and every query filters by
-- it. Skill and subagent documents live on disk under
-- <data dir>/artifacts/<tenant>/; these rows index them.

-- +goose Up
CREATE TABLE artifacts.skills (
    tenant_id      uuid        NOT NULL,
    slug           text        NOT NULL CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 64),
    name           text        NOT NULL,
    description    text        NOT NULL,
    triggers       text[]      NOT NULL DEFAULT '{auto}',
    argument_hint  text        NOT NULL DEFAULT '',
    uses           text[]      NOT NULL DEFAULT '{}',
    enabled        boolean     NOT NULL DEFAULT true,
    source         text        NOT NULL DEFAULT 'custom',
    imported_from  text,       -- the legacy command slug it was imported from
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, slug)
);
CREATE UNIQUE INDEX skills_imported ON artifacts.skills (tenant_id, imported_from) WHERE imported_from IS NOT NULL;

CREATE TABLE artifacts.subagents (
    tenant_id        uuid        NOT NULL,
    slug             text        NOT NULL CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$' AND length(slug) <= 64),
    name             text        NOT NULL,
    description      text        NOT NULL,
    model            text        NOT NULL DEFAULT '',
    tools            text[]      NOT NULL DEFAULT '{}',
    model_by_engine  jsonb       NOT NULL DEFAULT '{}',
    tools_by_engine  jsonb       NOT NULL DEFAULT '{}',
    enabled          boolean     NOT NULL DEFAULT true,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, slug)
);

CREATE TABLE artifacts.instructions (
    tenant_id   uuid        NOT NULL,
    scope       text        NOT NULL CHECK (scope IN ('global', 'project')),
    project_id  text        NOT NULL DEFAULT '',  -- '' for global
    content     text        NOT NULL,
    enabled     boolean     NOT NULL DEFAULT true,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, scope, project_id)
);

CREATE TABLE artifacts.profiles (
    tenant_id    uuid        NOT NULL,
    id           uuid        NOT NULL,
    slug         text        NOT NULL,
    name         text        NOT NULL,
    description  text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, slug)
);

CREATE TABLE artifacts.profile_items (
    tenant_id      uuid NOT NULL,
    profile_id     uuid NOT NULL,
    artifact_type  text NOT NULL CHECK (artifact_type IN ('skill', 'subagent', 'mcp')),
    ref            text NOT NULL,
    PRIMARY KEY (tenant_id, profile_id, artifact_type, ref),
    FOREIGN KEY (tenant_id, profile_id) REFERENCES artifacts.profiles (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE artifacts.project_defaults (
    tenant_id   uuid NOT NULL,
    project_id  text NOT NULL,
    profile_id  uuid NOT NULL,
    PRIMARY KEY (tenant_id, project_id),
    FOREIGN KEY (tenant_id, profile_id) REFERENCES artifacts.profiles (tenant_id, id) ON DELETE CASCADE
);

-- One row per layer; saving empty lists deletes the row. Permissions are
-- engine-independent: tool names are canonical across engines.
CREATE TABLE artifacts.permission_sets (
    tenant_id   uuid        NOT NULL,
    scope       text        NOT NULL CHECK (scope IN ('global', 'project', 'profile')),
    project_id  text        NOT NULL DEFAULT '',
    profile_id  text        NOT NULL DEFAULT '',
    allow       text[]      NOT NULL DEFAULT '{}',
    deny        text[]      NOT NULL DEFAULT '{}',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, scope, project_id, profile_id)
);

CREATE TABLE artifacts.engine_providers (
    tenant_id    uuid        NOT NULL,
    id           uuid        NOT NULL,
    engine_type  text        NOT NULL,
    slug         text        NOT NULL,
    name         text        NOT NULL,
    api_url      text        NOT NULL DEFAULT '',
    options      jsonb       NOT NULL DEFAULT '{}',
    enabled      boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, engine_type, slug)
);

CREATE TABLE artifacts.engine_accounts (
    tenant_id        uuid        NOT NULL,
    id               uuid        NOT NULL,
    provider_id      uuid        NOT NULL,
    name             text        NOT NULL,
    credential       text,       -- a seal envelope, never plaintext
    key_fingerprint  text,       -- of the key that sealed credential
    is_active        boolean     NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, provider_id) REFERENCES artifacts.engine_providers (tenant_id, id) ON DELETE CASCADE,
    CHECK (credential IS NULL OR credential LIKE 'v1:%')
);
CREATE UNIQUE INDEX engine_accounts_one_active ON artifacts.engine_accounts (tenant_id, provider_id) WHERE is_active;

-- +goose Down
DROP TABLE artifacts.engine_accounts;
DROP TABLE artifacts.engine_providers;
DROP TABLE artifacts.permission_sets;
DROP TABLE artifacts.project_defaults;
DROP TABLE artifacts.profile_items;
DROP TABLE artifacts.profiles;
DROP TABLE artifacts.instructions;
DROP TABLE artifacts.subagents;
DROP TABLE artifacts.skills;
