# What a frequent term costs before any score (issue 17, item 1): for each
# query, the rows FTS5 matches, the time to walk them (count(*) ... MATCH),
# and the time of stock bm25's top 20, on sessiondb files (read-only).
# Medians of 7 and 3 calls. Usage: python3 bench_fts_walk.py FILE.db...
import sqlite3, sys, time

QUERIES = ["docker", "error", "deployment", '"docker deployment"', "deploy*", "helm", "jitter"]


def median_ms(f, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[n // 2] * 1000


for path in sys.argv[1:]:
    c = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    total = c.execute("SELECT count(*) FROM messages").fetchone()[0]
    print("%s: %d messages (SQLite %s)" % (path, total, sqlite3.sqlite_version))
    for w in QUERIES:
        walk = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?"
        top = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts) LIMIT 20"
        n = c.execute(walk, (w,)).fetchone()[0]
        t_walk = median_ms(lambda: c.execute(walk, (w,)).fetchone(), 7)
        t_top = median_ms(lambda: c.execute(top, (w,)).fetchall(), 3)
        print("  %-22s matches %8d (%4.1f %%)  walk %8.2f ms  bm25 top 20 %8.2f ms" % (w, n, 100.0 * n / total, t_walk, t_top))
