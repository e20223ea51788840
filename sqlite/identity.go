package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
)

const keyGeneration = "db_file_generation"

// ensureIdentity mints the file's identity the way Hermes does, only when it
// is absent: state_meta.db_file_generation (a uuid4 hex, first writer wins)
// and PRAGMA application_id derived from it. Neither is ever changed: Hermes
// treats a changed application_id as a replaced file and stops writing.
func (db *DB) ensureIdentity(ctx context.Context) error {
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
		if appID != 0 || len(token) < 8 {
			return nil
		}
		n, err := strconv.ParseUint(token[:8], 16, 32)
		if err != nil {
			return nil // a foreign token we cannot derive from: leave the id unset, as Hermes would fail to
		}
		appID = int64(n & 0x7FFFFFFF)
		if appID == 0 {
			appID = 1
		}
		_, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id=%d", appID))
		return err
	})
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
