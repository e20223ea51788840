-- Search (DESIGN.md, "Search"). Every column is written by the insert path
-- from indexMessage (index.go), which tokenizes in Go with the SQLite
-- indexes' own tokenizers:
--   tsv        the word index (unicode61) over content (tool rows: its first
--              8192 characters), tool_name and tool_calls, with positions;
--   doclen     FTS5's document length of that row (all columns);
--   tsv_cjk    the CJK bigram index (cjk_unicode61) over the same columns,
--              NULL for tool rows;
--   doclen_cjk its document length;
--   tsv_state  0 exact, 1 positions dropped (phrases checked in Go),
--              2 lexemes dropped (row checked in Go for every query);
--   trigram    the row is in the trigram index: not a tool row, not a cron
--              or subagent session, not a delegate child.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE messages
    ADD COLUMN tsv tsvector,
    ADD COLUMN doclen integer NOT NULL DEFAULT 0,
    ADD COLUMN tsv_cjk tsvector,
    ADD COLUMN doclen_cjk integer NOT NULL DEFAULT 0,
    ADD COLUMN tsv_state smallint NOT NULL DEFAULT 0,
    ADD COLUMN trigram boolean NOT NULL DEFAULT false;

CREATE INDEX messages_tsv ON messages USING gin (tsv);
CREATE INDEX messages_tsv_cjk ON messages USING gin (tsv_cjk);
CREATE INDEX messages_tsv_incomplete ON messages (id) WHERE tsv_state = 2;
CREATE INDEX messages_trigram_content ON messages USING gin (content gin_trgm_ops) WHERE trigram;
CREATE INDEX messages_trigram_tool_name ON messages USING gin (tool_name gin_trgm_ops) WHERE trigram;
