-- The state a turn left (events.RunState.Snapshot on its terminal event):
-- snapshot_id names the snapshot of the session's workspace and engine
-- session files after the turn, which the next turn on the same branch
-- starts from on whatever worker runs it; snapshot keeps what the capture
-- did and the files the turn changed. NULL: no snapshot was taken (a run
-- that never started, or a worker that took none).

-- +goose Up
ALTER TABLE streammgr.runs ADD COLUMN snapshot_id text, ADD COLUMN snapshot jsonb;

-- +goose Down
ALTER TABLE streammgr.runs DROP COLUMN snapshot, DROP COLUMN snapshot_id;
