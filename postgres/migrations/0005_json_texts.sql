-- What a reasoning search reads of reasoning_details (SQLite's json_tree
-- over the column, type 'text'): the string values of a JSON document, at
-- any depth, keys left out. sessiondb_json_valid tells JSON from other
-- text (PostgreSQL 15 has no IS JSON); both take the stored (escaped) text.
CREATE FUNCTION sessiondb_json_valid(doc text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    PERFORM doc::jsonb;
    RETURN doc IS NOT NULL;
EXCEPTION WHEN others THEN
    RETURN false;
END
$$;

CREATE FUNCTION sessiondb_json_texts(doc text) RETURNS SETOF text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN QUERY SELECT v #>> '{}' FROM jsonb_path_query(doc::jsonb, 'strict $.**') AS v
        WHERE jsonb_typeof(v) = 'string';
EXCEPTION WHEN others THEN
    RETURN;
END
$$;
