-- Budgets: a tenant may have one limit per unit (tokens or usd) and
-- calendar period (day, week, month; UTC). Admission refuses a send once a
-- budget is spent, and the budget watch stops the tenant's running turns.
--
-- live_usage is the newest running count of a run (a "usage" event: the
-- model proxy's, which wins over the engine's own), so the spend of a turn
-- still going counts before its terminal event brings the final numbers.
--
-- tenant_spend is the ledger of what ended runs spent, by tenant and the UTC
-- day they were queued: the writer adds a run's final spend in the
-- transaction that ends it, and a session's deletion adds what its running
-- turns had spent, so deleting runs gives no budget back and a period's
-- spend is a few ledger rows plus the tenant's unfinished runs.
--
-- audit_log is streammgr's part of the tenants' audit log (budgets, limits).

-- +goose Up
CREATE TABLE streammgr.tenant_budgets (
    tenant_id   uuid             NOT NULL,
    unit        text             NOT NULL CHECK (unit IN ('tokens', 'usd')),
    period      text             NOT NULL CHECK (period IN ('day', 'week', 'month')),
    amount      double precision NOT NULL CHECK (amount >= 0),
    updated_at  timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, unit, period)
);

ALTER TABLE streammgr.runs ADD COLUMN live_usage jsonb;

CREATE TABLE streammgr.tenant_spend (
    tenant_id  uuid             NOT NULL,
    day        date             NOT NULL,
    tokens     bigint           NOT NULL DEFAULT 0,
    usd        double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day)
);
-- What the runs that already ended spent.
INSERT INTO streammgr.tenant_spend (tenant_id, day, tokens, usd)
SELECT tenant_id, (queued_at AT TIME ZONE 'UTC')::date,
    sum(coalesce((coalesce(metered_usage, usage)->>'inputTokens')::bigint, 0) +
        coalesce((coalesce(metered_usage, usage)->>'outputTokens')::bigint, 0) +
        coalesce((coalesce(metered_usage, usage)->>'cacheCreationInputTokens')::bigint, 0)),
    sum(coalesce(cost_usd, 0))
FROM streammgr.runs
WHERE dispatched_at IS NOT NULL AND state IN ('completed', 'failed', 'cancelled', 'lost')
GROUP BY 1, 2;

CREATE TABLE streammgr.audit_log (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_id     text        NOT NULL,
    actor_name   text        NOT NULL,
    action       text        NOT NULL,
    target_type  text        NOT NULL,
    target_id    text        NOT NULL,
    target_name  text        NOT NULL DEFAULT '',
    before       jsonb,
    after        jsonb
);
CREATE INDEX audit_log_by_tenant ON streammgr.audit_log (tenant_id, at DESC, id DESC);

-- +goose Down
DROP TABLE streammgr.audit_log;
DROP TABLE streammgr.tenant_spend;
ALTER TABLE streammgr.runs DROP COLUMN live_usage;
DROP TABLE streammgr.tenant_budgets;
