-- 3: running count and size of the kept logs, so the --max-stored-log-mib check costs
-- the same with a million kept logs as with one (crate::retention).
CREATE TABLE submitted_logs_total (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    logs   INTEGER NOT NULL,
    bytes  INTEGER NOT NULL
);
INSERT INTO submitted_logs_total (id, logs, bytes)
    SELECT 1, COUNT(*), COALESCE(SUM(bytes), 0) FROM submitted_logs;
CREATE TRIGGER submitted_logs_total_insert AFTER INSERT ON submitted_logs BEGIN
    UPDATE submitted_logs_total SET logs = logs + 1, bytes = bytes + NEW.bytes WHERE id = 1;
END;
CREATE TRIGGER submitted_logs_total_delete AFTER DELETE ON submitted_logs BEGIN
    UPDATE submitted_logs_total SET logs = logs - 1, bytes = bytes - OLD.bytes WHERE id = 1;
END;
CREATE TRIGGER submitted_logs_total_update AFTER UPDATE OF bytes ON submitted_logs BEGIN
    UPDATE submitted_logs_total SET bytes = bytes - OLD.bytes + NEW.bytes WHERE id = 1;
END;
