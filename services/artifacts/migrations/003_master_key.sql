-- Which master key seals new credentials: one row, changed only by a key
-- rotation. Every seal reads it FOR SHARE and a rotation holds it FOR
-- UPDATE, so no credential is sealed with the old key once a rotation has
-- begun, and replicas switch keys without a restart.

-- +goose Up
CREATE TABLE artifacts.master_key (
    id           boolean     PRIMARY KEY DEFAULT true CHECK (id),
    fingerprint  text        NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{8}$'),
    rotated_at   timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE artifacts.master_key;
