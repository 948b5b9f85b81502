-- The project's files a session starts from: the snapshot of the project's
-- base when the session was created (NULL: it starts empty). A session's
-- first turn restores it; later turns start from the newest snapshot on
-- HEAD, and a run's job keeps the snapshot it started from.

-- +goose Up
ALTER TABLE streammgr.chat_sessions ADD COLUMN base_snapshot_id text;

-- +goose Down
ALTER TABLE streammgr.chat_sessions DROP COLUMN base_snapshot_id;
