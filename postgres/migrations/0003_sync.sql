-- sessiondb on PostgreSQL, schema 3: the state of `sessiondb sync`, per
-- origin (the host a state.db was copied from). See postgres/DESIGN.md.

-- One row per origin. Every source message with an id at most message_hw
-- is copied; it moves in the same transaction as the rows it covers, so a
-- sync killed at any point resumes where its last commit left it.
CREATE TABLE sync_origins (
    origin text PRIMARY KEY,
    source_path text NOT NULL,
    -- state_meta.db_file_generation of the source file when it has one: a
    -- different file under the same origin is refused rather than merged.
    source_generation text NOT NULL DEFAULT '',
    message_hw bigint NOT NULL DEFAULT 0,
    first_synced_at timestamptz NOT NULL DEFAULT now(),
    last_synced_at timestamptz NOT NULL DEFAULT now()
);

-- One row per session of an origin the source has (or had).
CREATE TABLE sync_sessions (
    origin text NOT NULL REFERENCES sync_origins (origin) ON DELETE CASCADE,
    session_id text NOT NULL,
    -- sha-256 of the session row and its usage rows as last copied; NULL
    -- while the session id belongs to another origin (conflict_origin) and
    -- was not copied.
    fingerprint bytea,
    -- XOR of a 64-bit hash of each copied message's id and mutable columns
    -- (active, compacted, display order …), over the messages at most
    -- message_hw: a session whose row changed is checked against it.
    messages_fingerprint bigint NOT NULL DEFAULT 0,
    conflict_origin text,
    -- the source no longer has the session; PostgreSQL keeps it (archive)
    -- unless the sync runs with --mirror-deletes.
    gone boolean NOT NULL DEFAULT false,
    PRIMARY KEY (origin, session_id)
);
