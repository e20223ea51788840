#!/usr/bin/env python3
"""Play a Hermes Agent process appending to a shared state.db.

Used by TestCowriterHermes (reliability_test.go). Standard library only. The
process behaves like a Hermes whose SQLite lacks the cjk_unicode61 tokenizer:

* connect with timeout=1.0 and isolation_level=None (autocommit; every
  transaction is explicit);
* before the first message write, in one BEGIN IMMEDIATE: if any
  messages_fts_cjk_* trigger exists, upsert state_meta('fts_cjk_stale','1')
  and drop the three CJK triggers (STORAGE.md §1.5);
* append each message in its own BEGIN IMMEDIATE transaction: INSERT with an
  explicit column list and active=1, then bump message_count and
  tool_call_count; on "database is locked"/"busy" the whole transaction is
  rolled back and retried after 20-150 ms of jitter, for up to 20 s.

Output on stdout, one line each, flushed:
    ready <json>          after the tokenizer-less protocol
    ack <id> <content>    after the COMMIT of each message
    done <json>           statistics at the end
Any other error goes to stderr and the exit status is 1.
"""

import argparse
import json
import random
import sqlite3
import sys
import time

RETRY_BUDGET = 20.0  # seconds, Hermes' default write patience

CJK_TRIGGERS = ("messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("--session", action="append", required=True,
                    help="session to append to (repeatable; messages go round-robin)")
    ap.add_argument("--create", action="append", default=[],
                    help="create this session first, as Hermes does (repeatable)")
    ap.add_argument("-n", type=int, default=100, help="messages to append")
    ap.add_argument("--tag", default="py", help="makes every content unique to this run")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    con = sqlite3.connect(args.db, timeout=1.0, isolation_level=None)
    stats = {"sqlite_version": sqlite3.sqlite_version, "retries": 0, "max_wait_s": 0.0}

    def tx(fn):
        """Run fn inside BEGIN IMMEDIATE; retry the whole transaction while locked."""
        start = time.monotonic()
        while True:
            try:
                con.execute("BEGIN IMMEDIATE")
                try:
                    result = fn()
                    con.execute("COMMIT")
                except BaseException:
                    if con.in_transaction:
                        con.execute("ROLLBACK")
                    raise
                stats["max_wait_s"] = max(stats["max_wait_s"], time.monotonic() - start)
                return result
            except sqlite3.OperationalError as e:
                msg = str(e).lower()
                if ("locked" in msg or "busy" in msg) and time.monotonic() - start < RETRY_BUDGET:
                    stats["retries"] += 1
                    time.sleep(rng.uniform(0.020, 0.150))
                    continue
                raise

    def drop_cjk_triggers():
        found = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages\\_fts\\_cjk\\_%' ESCAPE '\\'")]
        if found:
            con.execute("INSERT INTO state_meta(key,value) VALUES('fts_cjk_stale','1') "
                        "ON CONFLICT(key) DO UPDATE SET value=excluded.value")
            for name in CJK_TRIGGERS:
                con.execute("DROP TRIGGER IF EXISTS " + name)
        return sorted(found)

    stats["dropped_cjk_triggers"] = tx(drop_cjk_triggers)

    def create_session(sid):
        con.execute("INSERT OR IGNORE INTO sessions (id, source, model, started_at, message_count, tool_call_count) "
                    "VALUES (?, 'cli', 'hermes-cowriter', ?, 0, 0)", (sid, time.time()))

    for sid in args.create:
        tx(lambda: create_session(sid))
    emit("ready", json.dumps(stats))

    for i in range(args.n):
        sid = args.session[i % len(args.session)]
        m = message(args.tag, i, rng)

        def append():
            cur = con.execute(
                "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
                "timestamp, token_count, finish_reason, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                (sid, m["role"], m["content"], m["tool_call_id"], m["tool_calls"], m["tool_name"],
                 time.time(), m["token_count"], m["finish_reason"]))
            con.execute("UPDATE sessions SET message_count = message_count + 1, "
                        "tool_call_count = tool_call_count + ? WHERE id = ?", (m["calls"], sid))
            return cur.lastrowid

        rowid = tx(append)
        emit("ack", "%d %s" % (rowid, m["content"]))

    con.close()
    emit("done", json.dumps(stats))


def message(tag, i, rng):
    """The i-th message: user (every other one with Chinese text), assistant
    with one or two tool calls, tool result, assistant answer. Every content
    holds the word 'pyword' and the unique token '<tag>-<i>'."""
    m = {"tool_call_id": None, "tool_calls": None, "tool_name": None, "finish_reason": None,
         "token_count": rng.randint(1, 500), "calls": 0}
    kind = i % 4
    key = "%s-%d" % (tag, i)
    if kind == 0:
        m["role"] = "user"
        m["content"] = "pyword %s 请帮我看看大别山项目的进度" % key if i % 8 == 0 else "pyword %s please check" % key
    elif kind == 1:
        k = 1 + i % 2
        calls = [{"id": "call_%s_%d" % (key, j), "type": "function",
                  "function": {"name": "terminal", "arguments": json.dumps({"command": "docker ps"})}}
                 for j in range(k)]
        m.update(role="assistant", content="pyword %s calling tools" % key, tool_calls=json.dumps(calls), calls=k)
    elif kind == 2:
        m.update(role="tool", content="pyword %s CONTAINER ID IMAGE" % key, tool_call_id="call_%s_0" % key,
                 tool_name="terminal")
    else:
        m.update(role="assistant", content="pyword %s done" % key, finish_reason="stop")
    return m


def emit(kind, text):
    sys.stdout.write("%s %s\n" % (kind, text))
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # report and fail: the Go test reads stderr
        sys.stderr.write("hermes_cowriter: %s: %s\n" % (type(e).__name__, e))
        sys.exit(1)
