-- The usage the worker's model proxy counted from the provider's responses
-- to a run (events.RunState.MeteredUsage on its terminal event), beside
-- usage, the agent's own report. NULL: the run did not go through the
-- proxy (an unconfined worker, or a model server the agent reached
-- directly).

-- +goose Up
ALTER TABLE streammgr.runs ADD COLUMN metered_usage jsonb;

-- +goose Down
ALTER TABLE streammgr.runs DROP COLUMN metered_usage;
