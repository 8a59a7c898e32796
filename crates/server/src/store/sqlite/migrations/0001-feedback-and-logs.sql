-- 1: feedback reports and opted-in logs.
CREATE TABLE feedback (
    id          INTEGER PRIMARY KEY,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    entry       TEXT NOT NULL,
    fix         TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('worked', 'did-not-work')),
    platform    TEXT,
    hardware    TEXT,
    version     TEXT,
    note        TEXT
);
CREATE INDEX feedback_by_fix ON feedback (entry, fix);
CREATE TABLE submitted_logs (
    id          INTEGER PRIMARY KEY,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    bytes       INTEGER NOT NULL,
    body        BLOB NOT NULL
);
