package browse

import (
	"context"
	"io"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Store is what the browser needs from a session store. The signatures are
// those of *sqlite.DB (and of sessiondb.Store).
type Store interface {
	ListSessions(ctx context.Context, o sessiondb.ListOptions) ([]sessiondb.SessionSummary, int, error)
	Search(ctx context.Context, query string, o sessiondb.SearchOptions) ([]sessiondb.SearchHit, error)
	Session(ctx context.Context, id string) (*sessiondb.Session, error)
	Messages(ctx context.Context, sessionID string, f sessiondb.MessageFilter) ([]*sessiondb.Message, error)
	SetTitle(ctx context.Context, id, title string) error
	SetPinned(ctx context.Context, id string, pinned bool) error
	SetArchived(ctx context.Context, id string, archived bool) error
	DeleteSession(ctx context.Context, id string) ([]string, error)
}

// ExportFunc writes one session and its messages to w as Markdown.
type ExportFunc func(w io.Writer, s *sessiondb.Session, msgs []*sessiondb.Message) error

// Options configure New.
type Options struct {
	// Path is the database path the status line shows.
	Path string
	// ExportDir is where the export key writes <id>.md; "" is the current
	// directory.
	ExportDir string
	// Export encodes a session for the export key; nil turns the key off.
	Export ExportFunc
	// Color allows colour styles. Leave it false when NO_COLOR is set: the
	// UI then uses only bold, faint, underline and reverse video.
	Color bool
	// Debounce is how long search waits after the last keystroke (0 means
	// DefaultDebounce).
	Debounce time.Duration
	// PageSize is how many sessions one list read loads (0 means
	// DefaultPageSize); more are loaded as the cursor nears the end.
	PageSize int
	// Now is the clock used to format dates (nil means time.Now).
	Now func() time.Time
}

// Defaults for Options.
const (
	DefaultDebounce = 150 * time.Millisecond
	DefaultPageSize = 100
	// SearchLimit is how many hits one search shows.
	SearchLimit = 100
)
