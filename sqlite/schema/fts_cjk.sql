-- CJK bigram index (tokenizer cjk_unicode61, registered in Go by
-- sqlite/fts5cjk on every connection). Leaves out tool rows. Gated on its own
-- pair of deferred-rebuild keys.
CREATE VIEW IF NOT EXISTS messages_fts_cjk_src AS
    SELECT id, role, content, tool_name, tool_calls
    FROM messages
    WHERE role <> 'tool';

CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts_cjk USING fts5(
    content,
    tool_name,
    tool_calls,
    content='messages_fts_cjk_src',
    content_rowid='id',
    tokenize='cjk_unicode61'
);
