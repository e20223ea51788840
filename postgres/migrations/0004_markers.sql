-- sessiondb on PostgreSQL, schema 4: reading the markers a session's
-- model_config carries (_branched_from, _reset_from, _delegate_from), as
-- SQLite's json_extract over json_valid does: NULL when model_config is
-- NULL, not JSON, not an object or lacks the key. model_config is text
-- (synced rows may hold anything), so a cast that fails must not fail the
-- query that reads it.
CREATE FUNCTION sessiondb_marker(config text, key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF config IS NULL OR strpos(config, key) = 0 THEN
        RETURN NULL;
    END IF;
    BEGIN
        RETURN config::jsonb ->> key;
    EXCEPTION WHEN others THEN
        RETURN NULL;
    END;
END
$$;
