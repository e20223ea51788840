# bench_list_standin.py FILE.db [CALLS]: a list of 20 sessions shaped like
# Hermes' v30 list_sessions_rich(limit=20): one statement selecting every
# session column, the first user message's first 63 characters and the
# newest message's time as correlated subqueries, over roots and branched
# children (its v30 filter), each row made a dict with its preview; timed
# in-process on Python's sqlite3. A stand-in for Hermes on a machine
# without it, not Hermes itself.
import sqlite3, sys, time
path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, check_same_thread=False)
con.row_factory = sqlite3.Row
Q = """SELECT s.*,
  COALESCE((SELECT SUBSTR(REPLACE(REPLACE(m.content, X'0A', ' '), X'0D', ' '), 1, 63)
            FROM messages m WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
            ORDER BY m.timestamp, m.id LIMIT 1), '') AS _preview_raw,
  COALESCE((SELECT MAX(m2.timestamp) FROM messages m2 WHERE m2.session_id = s.id), s.started_at) AS last_active
FROM sessions s WHERE (s.parent_session_id IS NULL OR EXISTS (SELECT 1 FROM sessions p
  WHERE p.id = s.parent_session_id AND p.end_reason = 'branched' AND s.started_at >= p.ended_at))
ORDER BY s.started_at DESC LIMIT ? OFFSET ?"""
def rich():
    out = []
    for row in con.execute(Q, (20, 0)).fetchall():
        s = dict(row)
        raw = (s.pop("_preview_raw") or "").strip()
        s["preview"] = raw[:60] + ("..." if len(raw) > 60 else "")
        out.append(s)
    return out
rich()
ts = []
for _ in range(n):
    t0 = time.perf_counter(); rich(); ts.append(time.perf_counter() - t0)
ts.sort()
print("hermes-shaped list-20 p50 %.3f ms p10 %.3f ms (%d calls, sqlite %s)" % (ts[n // 2] * 1e3, ts[n // 10] * 1e3, n, sqlite3.sqlite_version))
