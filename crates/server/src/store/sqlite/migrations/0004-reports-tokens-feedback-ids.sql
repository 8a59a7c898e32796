-- 4: idempotent and rate-limited feedback, ingested job-failure reports, API tokens.
-- report_id: a client-chosen id, so a retried report is stored once.
-- client: a SHA-256 prefix of the sender's address (store::client_key), for the per-client rules.
ALTER TABLE feedback ADD COLUMN report_id TEXT;
ALTER TABLE feedback ADD COLUMN client TEXT;
CREATE UNIQUE INDEX feedback_by_report_id ON feedback (report_id) WHERE report_id IS NOT NULL;
CREATE INDEX feedback_by_client ON feedback (client, created_at) WHERE client IS NOT NULL;
CREATE TABLE reports (
    id              INTEGER PRIMARY KEY,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    report_id       TEXT UNIQUE,
    token_id        INTEGER,
    source          TEXT NOT NULL,
    job_id          TEXT,
    cluster         TEXT,
    host            TEXT,
    rank            TEXT,
    user_name       TEXT,
    image           TEXT,
    exit_status     INTEGER,
    versions        TEXT NOT NULL DEFAULT '{}',
    extra           TEXT NOT NULL DEFAULT '{}',
    entry           TEXT,
    category        TEXT,
    memory_failure  INTEGER NOT NULL,
    findings        INTEGER NOT NULL,
    report          TEXT NOT NULL
);
CREATE INDEX reports_by_time ON reports (created_at);
CREATE TABLE api_tokens (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    hash        TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    revoked_at  TEXT
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;
