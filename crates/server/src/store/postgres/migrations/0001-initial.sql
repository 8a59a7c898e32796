-- 1: the whole schema of the SQLite store's migrations 1-4, in PostgreSQL's types.
-- Tallies are GROUP BYs over feedback_by_fix (no trigger-kept table), and the stored-log
-- totals are kept by the same transaction that changes the logs (store::postgres).
-- A report's diagnosis is JSON (text kept as sent), not JSONB: it is stored and read back
-- whole, never queried inside, and parsing 30 KB into JSONB on every insert costs CPU.
CREATE TABLE feedback (
    id          BIGSERIAL PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    entry       TEXT NOT NULL,
    fix         TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('worked', 'did-not-work')),
    platform    TEXT,
    hardware    TEXT,
    version     TEXT,
    note        TEXT,
    report_id   TEXT UNIQUE,
    client      TEXT
);
CREATE INDEX feedback_by_fix ON feedback (entry, fix);
CREATE INDEX feedback_by_client ON feedback (client, created_at) WHERE client IS NOT NULL;
CREATE TABLE submitted_logs (
    id          BIGSERIAL PRIMARY KEY,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    bytes       BIGINT NOT NULL,
    body        BYTEA NOT NULL
);
CREATE INDEX submitted_logs_by_time ON submitted_logs (created_at);
CREATE TABLE submitted_logs_total (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    logs   BIGINT NOT NULL,
    bytes  BIGINT NOT NULL
);
INSERT INTO submitted_logs_total (id, logs, bytes) VALUES (1, 0, 0);
CREATE TABLE reports (
    id              BIGSERIAL PRIMARY KEY,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    report_id       TEXT UNIQUE,
    token_id        BIGINT,
    source          TEXT NOT NULL,
    job_id          TEXT,
    cluster         TEXT,
    host            TEXT,
    rank            TEXT,
    user_name       TEXT,
    image           TEXT,
    exit_status     BIGINT,
    versions        JSONB NOT NULL DEFAULT '{}',
    extra           JSONB NOT NULL DEFAULT '{}',
    entry           TEXT,
    category        TEXT,
    memory_failure  BOOLEAN NOT NULL,
    findings        INTEGER NOT NULL,
    report          JSON NOT NULL
);
CREATE INDEX reports_by_time ON reports (created_at);
CREATE TABLE api_tokens (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    revoked_at  TIMESTAMPTZ
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
-- LZ4 for the diagnoses TOAST keeps: pglz took 15% of the CPU of the replica benchmark's
-- inserts. PostgreSQL before 14, or built without lz4, keeps its default.
DO $$ BEGIN
    ALTER TABLE reports ALTER COLUMN report SET COMPRESSION lz4;
EXCEPTION WHEN others THEN NULL;
END $$;
