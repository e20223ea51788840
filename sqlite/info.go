package sqlite

import (
	"context"
	"os"
	"path/filepath"
)

// Info describes a database file for `sessiondb info` and `init`.
type Info struct {
	Path          string           `json:"path"`
	SchemaVersion int              `json:"schema_version"`
	JournalMode   string           `json:"journal_mode"`
	FTSLayout     string           `json:"fts_layout"`
	FTSStorage    string           `json:"fts_storage_version,omitempty"`
	Indexes       map[string]bool  `json:"indexes"` // FTS index name → live (present, triggers installed, not stale)
	Pending       int64            `json:"pending_backfill"`
	Rows          map[string]int64 `json:"rows"`
	Files         map[string]int64 `json:"files"` // file name → size in bytes (missing files left out)
}

// Info reads the file's schema version, journal mode, FTS state, row counts
// and file sizes.
func (db *DB) Info(ctx context.Context) (*Info, error) {
	in := &Info{Path: db.path, JournalMode: db.journalMode, FTSLayout: db.currentLayout().String(),
		Indexes: map[string]bool{}, Rows: map[string]int64{}, Files: map[string]int64{}}
	if err := db.read.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&in.SchemaVersion); err != nil {
		return nil, db.mapErr("info", err)
	}
	in.FTSStorage, _, _ = db.Meta(ctx, keyStorage)
	objs, err := readSchema(ctx, db.read)
	if err != nil {
		return nil, db.mapErr("info", err)
	}
	_, stale, _ := metaInt(ctx, db.write, keyStale)
	_, cjkStale, _ := metaInt(ctx, db.write, keyCJKStale)
	_, cjkPending, _ := metaInt(ctx, db.write, keyCJKHighWater)
	_, pending, _ := metaInt(ctx, db.write, keyHighWater)
	for _, idx := range []struct {
		name     string
		triggers []string
		off      bool
	}{
		{"messages_fts", ftsTriggers[:3], stale || pending},
		{"messages_fts_trigram", ftsTriggers[3:], stale || pending},
		{"messages_fts_cjk", ftsCJKTriggers, cjkStale || cjkPending},
	} {
		if !objs.has(idx.name) {
			continue
		}
		live := !idx.off
		for _, tr := range idx.triggers {
			live = live && objs.has(tr)
		}
		in.Indexes[idx.name] = live
	}
	if in.Pending, err = db.PendingBackfill(ctx); err != nil {
		return nil, err
	}
	for _, t := range []string{"sessions", "messages", "system_prompts", "session_model_usage"} {
		var n int64
		if err := db.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t).Scan(&n); err != nil {
			return nil, db.mapErr("info", err)
		}
		in.Rows[t] = n
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(db.path + suffix); err == nil {
			in.Files[filepath.Base(db.path)+suffix] = fi.Size()
		}
	}
	return in, nil
}

func (db *DB) currentLayout() ftsLayout {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.layout
}

// MessageCount returns how many messages the file holds.
func (db *DB) MessageCount(ctx context.Context) (int64, error) {
	var n int64
	if err := db.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM messages").Scan(&n); err != nil {
		return 0, db.mapErr("count messages", err)
	}
	return n, nil
}
