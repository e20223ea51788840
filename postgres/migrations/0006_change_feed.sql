-- sessiondb on PostgreSQL, schema 6: the change feed (postgres/changes.go,
-- `sessiondb serve`'s live events). See postgres/DESIGN.md, "Change feed".
--
-- Message ids come from messages' identity sequence, but a transaction that
-- drew id 10 may commit after one that drew id 11, so "id > last seen"
-- alone could skip 10. Every transaction that writes sessions, messages or
-- session_model_usage therefore *claims* the ids it may draw before it draws
-- any: a statement trigger takes a transaction-level shared advisory lock
-- whose key holds the sequence's last value at that moment (all its ids will
-- be above it). Locks are visible to every session at once (pg_locks), so a
-- reader computes a horizon below which no id can appear any more
-- (sessiondb_feed_horizon) and reports messages only up to it. Nothing here
-- blocks a writer: shared locks do not conflict and nobody takes the
-- exclusive one.

-- A session's position in the feed: drawn, like a message id, from the
-- messages' sequence, so that one horizon covers new sessions and new
-- messages. Existing rows get positions now (in no particular order).
ALTER TABLE sessions ADD COLUMN feed_seq bigint;
UPDATE sessions SET feed_seq = nextval(pg_get_serial_sequence('messages', 'id'));
DO $$ BEGIN
    EXECUTE format('ALTER TABLE sessions ALTER COLUMN feed_seq SET DEFAULT nextval(%L::regclass)',
        pg_get_serial_sequence('messages', 'id'));
END $$;
ALTER TABLE sessions ALTER COLUMN feed_seq SET NOT NULL;
CREATE INDEX idx_sessions_feed_seq ON sessions (feed_seq);

-- The claim needs ids drawn in increasing order across connections: no
-- per-connection cache (the default, said explicitly).
ALTER TABLE messages ALTER COLUMN id SET CACHE 1;

-- The functions below name the sequence as every statement of sessiondb
-- names a table: unqualified, through the search path.
DO $$ BEGIN
    IF pg_get_serial_sequence('messages', 'id')::regclass <> 'messages_id_seq'::regclass THEN
        RAISE EXCEPTION 'messages.id draws from %, not messages_id_seq', pg_get_serial_sequence('messages', 'id');
    END IF;
END $$;

-- Bumped once by every writing transaction: with the claims held, what
-- DataVersion reads.
CREATE SEQUENCE sessiondb_change_seq;

-- The claim's advisory lock key: 0x5344 ("SD") in the top 16 bits, the
-- sequence value in the low 48.
CREATE FUNCTION sessiondb_feed_key(last_id bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (x'5344'::bigint << 48) | (last_id & x'ffffffffffff'::bigint)
$$;

-- The statement trigger of every table the feed covers: once per
-- transaction (the setting remembers the transaction that claimed; a
-- rolled-back savepoint forgets it with its lock), read the sequence, claim
-- above it, then bump the change counter.
CREATE FUNCTION sessiondb_feed_claim() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    xid text := pg_current_xact_id()::text;
BEGIN
    IF current_setting('sessiondb.feed_claim', true) IS DISTINCT FROM xid THEN
        PERFORM pg_advisory_xact_lock_shared(sessiondb_feed_key(
            COALESCE(pg_sequence_last_value('messages_id_seq'::regclass), 0)));
        PERFORM nextval('sessiondb_change_seq');
        PERFORM set_config('sessiondb.feed_claim', xid, true);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER sessiondb_feed_sessions BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION sessiondb_feed_claim();
CREATE TRIGGER sessiondb_feed_messages BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON messages
    FOR EACH STATEMENT EXECUTE FUNCTION sessiondb_feed_claim();
CREATE TRIGGER sessiondb_feed_usage BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON session_model_usage
    FOR EACH STATEMENT EXECUTE FUNCTION sessiondb_feed_claim();

-- The claims other transactions of this database hold now: their keys'
-- sequence values, and the transactions holding them.
CREATE FUNCTION sessiondb_feed_claims(OUT last_id bigint, OUT holder text) RETURNS SETOF record
LANGUAGE sql STABLE AS $$
    SELECT ((l.classid::bigint & 65535) << 32) | l.objid::bigint, l.virtualtransaction
    FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND (l.classid::bigint >> 16) = x'5344'::bigint
$$;

-- The horizon: every message id (and session feed_seq) at most this is
-- either visible to a statement that starts after this one returns, or
-- will never be. First the sequence (every id up to it was drawn), then the
-- claims (a transaction still open drew nothing at or below its claim);
-- the order matters and a VOLATILE function runs its statements in order.
CREATE FUNCTION sessiondb_feed_horizon() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    drawn bigint := COALESCE(pg_sequence_last_value('messages_id_seq'::regclass), 0);
    claimed bigint;
BEGIN
    SELECT min(last_id) INTO claimed FROM sessiondb_feed_claims();
    RETURN LEAST(drawn, claimed);
END
$$;
