-- 5: a kept log's diagnosis has its own address, /diagnoses/<link>: an unguessable key
-- (logs kept before this have none, so they stay unreachable from outside).
ALTER TABLE submitted_logs ADD COLUMN link TEXT;
CREATE UNIQUE INDEX submitted_logs_by_link ON submitted_logs (link);
