-- sessiondb's range summaries of the frequent terms of the word and CJK
-- indexes (fts: the index's table; see
-- DESIGN.md, "Top-k ranking from range summaries"). A term's summary covers
-- its rows with id <= through; a row inserted, deleted or updated with an id
-- at or below state_meta's sessiondb_rank_through is logged in
-- sessiondb_rank_dirty, whose seq only grows; a summary reflects the log up
-- to its seen. Plain SQL, so Hermes' process runs the triggers too.
CREATE TABLE IF NOT EXISTS sessiondb_rank_terms (
    fts TEXT NOT NULL,
    term TEXT NOT NULL,
    through INTEGER NOT NULL,
    seen INTEGER NOT NULL,
    ranges BLOB NOT NULL,
    PRIMARY KEY (fts, term)
);

-- The summaries of a frequent term's rows in one rare source (DESIGN.md,
-- "Summaries of a rare source's rows"): ranges of the source's rows only,
-- digest that of the source's message ids up to through they were made
-- from; through and seen as above.
CREATE TABLE IF NOT EXISTS sessiondb_rank_sources (
    fts TEXT NOT NULL,
    term TEXT NOT NULL,
    source TEXT NOT NULL,
    through INTEGER NOT NULL,
    seen INTEGER NOT NULL,
    digest INTEGER NOT NULL,
    ranges BLOB NOT NULL,
    PRIMARY KEY (fts, term, source)
);

CREATE TABLE IF NOT EXISTS sessiondb_rank_dirty (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id INTEGER NOT NULL
);

CREATE TRIGGER IF NOT EXISTS sessiondb_rank_dirty_insert AFTER INSERT ON messages
WHEN new.id <= COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta
                         WHERE key = 'sessiondb_rank_through'), -1)
BEGIN
    INSERT INTO sessiondb_rank_dirty(id) VALUES (new.id);
END;

CREATE TRIGGER IF NOT EXISTS sessiondb_rank_dirty_delete AFTER DELETE ON messages
WHEN old.id <= COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta
                         WHERE key = 'sessiondb_rank_through'), -1)
BEGIN
    INSERT INTO sessiondb_rank_dirty(id) VALUES (old.id);
END;

CREATE TRIGGER IF NOT EXISTS sessiondb_rank_dirty_update
AFTER UPDATE OF content, tool_name, tool_calls, role ON messages
WHEN old.id <= COALESCE((SELECT CAST(value AS INTEGER) FROM state_meta
                         WHERE key = 'sessiondb_rank_through'), -1)
BEGIN
    INSERT INTO sessiondb_rank_dirty(id) VALUES (old.id);
END;
