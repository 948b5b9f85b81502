-- A retried lost run: retry_of names the lost run a run runs again (its
-- prompt, its engine selection, from the snapshot it started from). A lost
-- run has at most one retry, so asking twice returns the same run.

-- +goose Up
ALTER TABLE streammgr.runs ADD COLUMN retry_of uuid;
CREATE UNIQUE INDEX runs_by_retry_of ON streammgr.runs (retry_of) WHERE retry_of IS NOT NULL;

-- +goose Down
DROP INDEX streammgr.runs_by_retry_of;
ALTER TABLE streammgr.runs DROP COLUMN retry_of;
