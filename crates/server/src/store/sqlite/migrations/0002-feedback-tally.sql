-- 2: per-fix counts kept by triggers, so reading a fix's outcomes costs the number of
-- (platform, hardware) groups, not the number of reports (20 000 reports on one fix
-- made every feedback answer and entry page scan them all). Triggers keep the counts
-- right whichever way rows change, `sqlite3` edits by hand included.
-- NULL platform / hardware are stored as '' (NULLs would never conflict in the key).
CREATE TABLE feedback_tally (
    entry        TEXT NOT NULL,
    fix          TEXT NOT NULL,
    platform     TEXT NOT NULL,
    hardware     TEXT NOT NULL,
    worked       INTEGER NOT NULL DEFAULT 0,
    did_not_work INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (entry, fix, platform, hardware)
) WITHOUT ROWID;
INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
    SELECT entry, fix, COALESCE(platform, ''), COALESCE(hardware, ''),
           SUM(outcome = 'worked'), SUM(outcome = 'did-not-work')
    FROM feedback GROUP BY 1, 2, 3, 4;
CREATE TRIGGER feedback_tally_insert AFTER INSERT ON feedback BEGIN
    INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
    VALUES (NEW.entry, NEW.fix, COALESCE(NEW.platform, ''), COALESCE(NEW.hardware, ''),
            NEW.outcome = 'worked', NEW.outcome = 'did-not-work')
    ON CONFLICT (entry, fix, platform, hardware) DO UPDATE SET
        worked = worked + excluded.worked, did_not_work = did_not_work + excluded.did_not_work;
END;
CREATE TRIGGER feedback_tally_delete AFTER DELETE ON feedback BEGIN
    UPDATE feedback_tally SET worked = worked - (OLD.outcome = 'worked'),
                              did_not_work = did_not_work - (OLD.outcome = 'did-not-work')
    WHERE entry = OLD.entry AND fix = OLD.fix
      AND platform = COALESCE(OLD.platform, '') AND hardware = COALESCE(OLD.hardware, '');
    DELETE FROM feedback_tally WHERE worked <= 0 AND did_not_work <= 0;
END;
CREATE TRIGGER feedback_tally_update AFTER UPDATE OF entry, fix, outcome, platform, hardware ON feedback BEGIN
    UPDATE feedback_tally SET worked = worked - (OLD.outcome = 'worked'),
                              did_not_work = did_not_work - (OLD.outcome = 'did-not-work')
    WHERE entry = OLD.entry AND fix = OLD.fix
      AND platform = COALESCE(OLD.platform, '') AND hardware = COALESCE(OLD.hardware, '');
    DELETE FROM feedback_tally WHERE worked <= 0 AND did_not_work <= 0;
    INSERT INTO feedback_tally (entry, fix, platform, hardware, worked, did_not_work)
    VALUES (NEW.entry, NEW.fix, COALESCE(NEW.platform, ''), COALESCE(NEW.hardware, ''),
            NEW.outcome = 'worked', NEW.outcome = 'did-not-work')
    ON CONFLICT (entry, fix, platform, hardware) DO UPDATE SET
        worked = worked + excluded.worked, did_not_work = did_not_work + excluded.did_not_work;
END;
