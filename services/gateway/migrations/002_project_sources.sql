-- Where a project's files come from, and the files themselves.
-- source_kind: 'empty', 'git' (source_url, source_branch; a private
-- repository's credential is sealed in artifacts, never here) or 'archive'
-- (an upload). base_snapshot_id names the snapshot (in the snapshots object
-- store, under the tenant) of the project's base: what a new session starts
-- from and what a session is applied back to; base_commit is the git commit
-- it was made from, if any. NULL base: the project is empty.

-- +goose Up
ALTER TABLE gateway.projects
    ADD COLUMN source_kind      text NOT NULL DEFAULT 'empty' CHECK (source_kind IN ('empty', 'git', 'archive')),
    ADD COLUMN source_url       text,
    ADD COLUMN source_branch    text,
    ADD COLUMN base_snapshot_id text,
    ADD COLUMN base_commit      text,
    ADD COLUMN base_updated_at  timestamptz;

-- +goose Down
ALTER TABLE gateway.projects
    DROP COLUMN base_updated_at, DROP COLUMN base_commit, DROP COLUMN base_snapshot_id,
    DROP COLUMN source_branch, DROP COLUMN source_url, DROP COLUMN source_kind;
