package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/sessiondb/sessiondb"
)

// Check statuses.
const (
	CheckOK   = sessiondb.CheckOK
	CheckWarn = sessiondb.CheckWarn
	CheckFail = sessiondb.CheckFail
)

// Check is one finding of Diagnose.
type Check = sessiondb.Check

// Diagnosis is the result of Diagnose: a sessiondb.Diagnosis, with the
// file checks as methods.
type Diagnosis struct{ sessiondb.Diagnosis }

func (d *Diagnosis) add(name, status, detail, fix string) { d.Add(name, status, detail, fix) }

// Diagnose inspects a database without changing it: it opens the file
// read-only, runs no migration and takes no write lock (the lock probe
// rolls back at once). With full it runs integrity_check instead of
// quick_check. A SQLite file of another application gets one failed check
// saying so and nothing else; a missing file is an error (ErrNoDatabase).
func Diagnose(ctx context.Context, path string, full bool) (*Diagnosis, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	d := &Diagnosis{sessiondb.Diagnosis{Path: abs, Healthy: true}}
	// A missing file is the one-line error of every read command; whatever
	// else keeps the file from being used is a finding.
	if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
		return nil, noDatabase(abs, "")
	}
	if !d.checkAccess(abs) {
		d.add("database", CheckWarn, "not opened until the problems above are fixed (SQLite would fail, or create a -wal or -shm with the wrong mode); then run doctor again", "")
		return d, nil
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fileErr("database "+abs, err)
	}
	sizes := []string{fmt.Sprintf("%s %d bytes", filepath.Base(abs), fi.Size())}
	for _, suffix := range []string{"-wal", "-shm"} {
		if s, err := os.Stat(abs + suffix); err == nil {
			sizes = append(sizes, fmt.Sprintf("%s %d bytes", suffix, s.Size()))
		}
	}
	d.add("files", CheckOK, strings.Join(sizes, ", "), "")

	// What the file is decides everything else; another application's
	// file gets no further look (and no -wal or -shm left next to it).
	facts, ierr := inspect(ctx, abs)
	if ierr != nil && sessiondb.ErrorCode(ierr) != sessiondb.EPERM {
		d.add("schema", CheckFail, fmt.Sprintf("cannot read the schema: %v", ierr), recoverFix(ierr, abs))
		return d, nil
	}
	if ierr == nil && !d.hermesFile(facts) {
		return d, nil
	}
	db, immutable, err := openReadPool(ctx, abs, facts.walFormat)
	if err != nil {
		d.add("access", CheckFail, err.Error(), "")
		return d, nil
	}
	defer db.Close()
	if immutable {
		d.add("access", CheckWarn, "read as an immutable snapshot: this user cannot create or write the -shm of the WAL file (no process had it open)", "")
	}
	if ierr != nil {
		if err := facts.read(ctx, db); err != nil {
			err = mapErr(abs, true, "read the schema of "+abs, err)
			d.add("schema", CheckFail, fmt.Sprintf("cannot read the schema: %v", err), recoverFix(err, abs))
			return d, nil
		}
		if !d.hermesFile(facts) {
			return d, nil
		}
	}

	var version int
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&version); err != nil {
		err = mapErr(abs, true, "read the schema version of "+abs, err)
		d.add("schema", CheckFail, fmt.Sprintf("cannot read the schema: %v", err), recoverFix(err, abs))
		return d, nil
	}
	switch {
	case version < SchemaVersion:
		d.add("schema", CheckWarn, fmt.Sprintf("schema version %d; sessiondb writes %d", version, SchemaVersion), "sessiondb init")
	default:
		d.add("schema", CheckOK, fmt.Sprintf("schema version %d (sessiondb writes %d)", version, SchemaVersion), "")
	}

	var mode string
	db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	// An immutable snapshot reports "delete", and openReadPool takes one
	// only for a file in WAL mode.
	if immutable || strings.EqualFold(mode, "wal") {
		d.add("journal", CheckOK, "WAL", "")
	} else {
		d.add("journal", CheckWarn, fmt.Sprintf("journal mode %s: readers block writers; Hermes and sessiondb use WAL", mode),
			"stop every process using the file, then: sessiondb init")
	}

	var pages, free int64
	db.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages)
	db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free)
	if pages > 0 && float64(free)/float64(pages) > 0.25 {
		d.add("free space", CheckWarn, fmt.Sprintf("%d of %d pages free (%.0f%%)", free, pages, 100*float64(free)/float64(pages)), "sessiondb optimize --vacuum")
	} else {
		d.add("free space", CheckOK, fmt.Sprintf("%d of %d pages free", free, pages), "")
	}

	check := "quick_check"
	if full {
		check = "integrity_check"
	}
	// FTS5 findings are reported per index below; the rest is structural.
	var structural []string
	for _, p := range pragmaCheck(ctx, db, check) {
		if !strings.Contains(p, "FTS5 table") {
			structural = append(structural, p)
		}
	}
	if len(structural) == 0 {
		d.add(check, CheckOK, "ok", "")
	} else {
		d.add(check, CheckFail, strings.Join(structural, "; "), "sessiondb recover --source "+abs+" --output NEW.db")
	}

	objs, err := readSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	meta := map[string]string{}
	if rows, err := db.QueryContext(ctx, "SELECT key, COALESCE(value, '') FROM state_meta"); err == nil {
		for rows.Next() {
			var k, v string
			rows.Scan(&k, &v)
			meta[k] = v
		}
		rows.Close()
	}
	for _, t := range []string{"messages_fts", "messages_fts_trigram", "messages_fts_cjk"} {
		if !objs.has(t) {
			continue
		}
		pendingKey := keyHighWater
		if t == "messages_fts_cjk" {
			pendingKey = keyCJKHighWater
		}
		_, pending := meta[pendingKey]
		switch problems := pragmaCheck(ctx, db, "integrity_check("+t+")"); {
		case len(problems) == 0:
			d.add("index "+t, CheckOK, "consistent", "")
		case pending:
			d.add("index "+t, CheckWarn, "backfill pending (rows written before the index are not in it yet; search scans them)", "sessiondb init")
		default:
			d.add("index "+t, CheckFail, strings.Join(problems, "; "), "sessiondb rebuild-fts")
		}
		// A running backfill keeps the bulk merge policy on every index
		// until both families are done.
		_, wordPending := meta[keyHighWater]
		_, cjkPending := meta[keyCJKHighWater]
		var bulk int
		db.QueryRowContext(ctx, "SELECT count(*) FROM "+t+"_config WHERE k IN ('automerge', 'crisismerge')").Scan(&bulk)
		if bulk > 0 && !wordPending && !cjkPending {
			d.add("merge settings "+t, CheckWarn, "an interrupted rebuild left its wide merge settings (automerge, crisismerge): searches meet more segments than they need",
				"sessiondb optimize")
		}
	}
	if objs.has("sessiondb_rank_terms") {
		d.add(rankCheck(ctx, db, full))
	}
	if _, ok := meta[keyStale]; ok {
		d.add("fts_stale", CheckFail, "the word and trigram indexes were detached after an error; search is scanning", "sessiondb rebuild-fts")
	}
	if _, ok := meta[keyCJKStale]; ok {
		d.add("fts_cjk_stale", CheckWarn, "a process without the cjk_unicode61 tokenizer left a gap in the CJK index", "sessiondb init")
	}
	for _, k := range []struct{ hw, p, name string }{{keyHighWater, keyProgress, "word/trigram"}, {keyCJKHighWater, keyCJKProgress, "CJK"}} {
		if hw, ok := meta[k.hw]; ok {
			d.add("backfill "+k.name, CheckWarn, fmt.Sprintf("indexed up to id %s of %s", meta[k.p], hw), "sessiondb init")
		}
	}

	if fs := fsType(abs); fs != "" {
		if networkFS(fs) {
			d.add("filesystem", CheckWarn, fs+": WAL needs shared memory and reliable locks, which network and VM-shared filesystems do not give; keep state.db on a local disk", "")
		} else {
			d.add("filesystem", CheckOK, fs, "")
		}
	}
	if others := otherHolders(abs); len(others) > 0 {
		d.add("processes", CheckOK, fmt.Sprintf("open in pid %v", others), "")
	} else {
		d.add("processes", CheckOK, "no other process has the file open", "")
	}
	d.add(lockCheck(ctx, abs))
	return d, nil
}

// hermesFile adds the failed check for a file that is not a Hermes
// state.db (another application's, or an empty one) and reports whether
// the file is one.
func (d *Diagnosis) hermesFile(f *fileFacts) bool {
	if why := f.foreign(); why != "" {
		d.add("schema", CheckFail, "not a Hermes state.db: a SQLite database of another application ("+why+"); sessiondb will not change it", "")
		return false
	}
	if f.empty {
		d.add("schema", CheckFail, "not a Hermes state.db yet: an empty SQLite file", "sessiondb init")
		return false
	}
	return true
}

func pragmaCheck(ctx context.Context, db *sql.DB, pragma string) []string {
	rows, err := db.QueryContext(ctx, "PRAGMA "+pragma)
	if err != nil {
		return []string{err.Error()}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return []string{err.Error()}
		}
		if line != "ok" {
			out = append(out, line)
		}
	}
	if err := rows.Err(); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// lockCheck tries BEGIN IMMEDIATE with a zero busy timeout and rolls back:
// it tells whether another process holds the write lock right now.
func lockCheck(ctx context.Context, path string) (string, string, string, string) {
	db, err := sql.Open(driverName, dsn(path, url.Values{"_busy_timeout": {"0"}, "_txlock": {"immediate"}}))
	if err != nil {
		return "write lock", CheckWarn, err.Error(), ""
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	var se sqlite3.Error
	switch {
	case err == nil:
		tx.Rollback()
		return "write lock", CheckOK, "free", ""
	case errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked):
		return "write lock", CheckWarn, "held by another process right now (a long write, or a stuck process: see processes)", ""
	case errors.As(err, &se) && se.Code == sqlite3.ErrReadonly:
		return "write lock", CheckWarn, "the file is read-only for this user", "chmod u+rw " + path
	}
	return "write lock", CheckWarn, err.Error(), ""
}

// fsType is filesystemType, a variable for tests.
var fsType = filesystemType

// filesystemType returns the type of the filesystem holding path, from
// /proc/self/mountinfo (Linux), or "".
func filesystemType(path string) string {
	_, fs := mountOf(path)
	return fs
}

// crossVMFS reports whether fs is a filesystem shared between a VM and its
// host (virtiofs, 9p): WAL's shared memory does not work across it, so
// Hermes never enables WAL there (STORAGE.md §4.2, rule 6).
func crossVMFS(fs string) bool {
	switch fs {
	case "virtiofs", "fuse.virtiofs", "9p", "9p2000", "9p2000.l", "9p2000.u":
		return true
	}
	return false
}

func networkFS(fs string) bool {
	switch fs {
	case "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "9p2000", "9p2000.l", "9p2000.u", "virtiofs", "fuse.virtiofs",
		"fuse.sshfs", "afs", "ceph", "glusterfs", "fuse.glusterfs", "vboxsf", "prl_fs", "fuse.gcsfuse", "fuse.s3fs":
		return true
	}
	return false
}

// Checkpoint runs a PASSIVE WAL checkpoint (never TRUNCATE while others may
// be reading) and reports the WAL size afterwards.
func (db *DB) Checkpoint(ctx context.Context) error {
	if db.journalMode != "wal" {
		return nil
	}
	if err := db.writable(); err != nil {
		return err
	}
	_, err := db.write.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	return db.mapErr("checkpoint", err)
}
