-- Fair admission: a tenant's runs are admitted to the JOBS stream up to its
-- limit of concurrent runs; the others wait, held, in the order they were
-- sent. A null limit is the default streammgr was started with.

-- +goose Up
CREATE TABLE streammgr.tenant_limits (
    tenant_id       uuid        PRIMARY KEY,
    max_concurrent  integer     CHECK (max_concurrent BETWEEN 1 AND 10000),
    max_queued      integer     CHECK (max_queued BETWEEN 0 AND 100000),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- held_at: when the run became its idle session's active run without being
-- dispatched, because its tenant was at its limit; it is dispatched when
-- admitted (dispatched_at set).
ALTER TABLE streammgr.runs ADD COLUMN held_at timestamptz;
CREATE INDEX runs_held ON streammgr.runs (tenant_id, queued_at, id)
    WHERE state = 'queued' AND dispatched_at IS NULL AND held_at IS NOT NULL;
CREATE INDEX runs_unfinished_by_tenant ON streammgr.runs (tenant_id)
    WHERE state NOT IN ('completed', 'failed', 'cancelled', 'lost');

-- +goose Down
DROP INDEX streammgr.runs_unfinished_by_tenant;
DROP INDEX streammgr.runs_held;
ALTER TABLE streammgr.runs DROP COLUMN held_at;
DROP TABLE streammgr.tenant_limits;
