package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/sessiondb/sessiondb"
)

const keyGeneration = "db_file_generation"

// ensureIdentity mints the file's identity the way Hermes does, only when it
// is absent: state_meta.db_file_generation (a uuid4 hex, first writer wins)
// and PRAGMA application_id derived from it. Neither is ever changed: Hermes
// treats a changed application_id as a replaced file and stops writing. A
// file that has both takes no write transaction.
func (db *DB) ensureIdentity(ctx context.Context) error {
	if stamped, err := identityStamped(ctx, db.write); err != nil || stamped {
		return db.mapErr("read the file identity of "+db.path, err)
	}
	return db.writeTx(ctx, 0, "stamp file identity of "+db.path, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO state_meta (key, value) VALUES (?, ?)", keyGeneration, uuid4Hex()); err != nil {
			return err
		}
		var token string
		if err := tx.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", keyGeneration).Scan(&token); err != nil {
			return err
		}
		var appID int64
		if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
			return err
		}
		// A foreign token Hermes cannot derive from leaves the id unset,
		// as Hermes would.
		if derived := derivedAppID(token); appID == 0 && derived != 0 {
			_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d", derived))
			return err
		}
		return nil
	})
}

// identityStamped reports whether ensureIdentity has nothing to do: the
// token is there and the application_id is set (or cannot be derived).
func identityStamped(ctx context.Context, q querier) (bool, error) {
	var token sql.NullString
	err := q.QueryRowContext(ctx, "SELECT value FROM state_meta WHERE key = ?", keyGeneration).Scan(&token)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var appID int64
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return false, err
	}
	return appID != 0 || derivedAppID(token.String) == 0, nil
}

// fileIdentity is what a handle knows of the file it opened, to tell it
// from a file moved or copied into its place later.
type fileIdentity struct {
	info  os.FileInfo // of the database file at open
	appID int64       // its application_id after ensureIdentity; 0: unknown
}

// recordIdentity notes the file's inode and application_id once Open has
// stamped them.
func (db *DB) recordIdentity(ctx context.Context) error {
	info, err := os.Stat(db.path)
	if err != nil {
		return db.mapErr("stat "+db.path, err)
	}
	db.ident.info = info
	return db.mapErr("read application_id of "+db.path,
		db.write.QueryRowContext(ctx, "PRAGMA application_id").Scan(&db.ident.appID))
}

// checkIdentity stops a write, inside its transaction, when the path no
// longer holds the file the handle opened: another inode is there (a file
// moved into its place, or none), or the header's application_id is another
// non-zero value (a file copied over it). As in Hermes (STORAGE.md §4.6)
// this is sticky: the handle writes nothing more, and Close skips its
// checkpoint. Writing on would put messages into a file nobody reads.
func (db *DB) checkIdentity(ctx context.Context, tx *sql.Tx) error {
	if db.ident.info == nil {
		return nil // still opening
	}
	info, err := os.Stat(db.path)
	same := err == nil && os.SameFile(db.ident.info, info)
	if same && db.ident.appID != 0 {
		var appID int64
		if err := tx.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
			return err
		}
		same = appID == 0 || appID == db.ident.appID
	}
	if same {
		return nil
	}
	db.halted.CompareAndSwap(nil, sessiondb.Errorf(sessiondb.EINTERNAL,
		"database %s was replaced or removed after this handle opened it (another file is at its path now); nothing was written. Open the database again", db.path))
	return db.halted.Load()
}

// uuid4Hex returns a random RFC 4122 version-4 UUID as 32 hex digits.
func uuid4Hex() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b[:])
}
