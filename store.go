package sessiondb

import "context"

// Store is the contract every storage backend implements. Each method is one
// transaction; methods that take a session id return an ENOTFOUND *Error when
// the session does not exist (except EnsureSession and CreateSession, which
// create it).
type Store interface {
	// CreateSession inserts a session, or merges into an existing row with
	// the same id where the first writer wins. It returns the session id.
	CreateSession(ctx context.Context, s NewSession) (string, error)
	// EnsureSession creates the session if it does not exist and otherwise
	// leaves the row untouched.
	EnsureSession(ctx context.Context, id, source, model string) (string, error)
	// Session returns one session with its system prompt resolved.
	Session(ctx context.Context, id string) (*Session, error)
	// EndSession ends a session; the first end reason wins.
	EndSession(ctx context.Context, id, reason string) error
	// ReopenSession clears ended_at and end_reason.
	ReopenSession(ctx context.Context, id string) error
	// UpdateSystemPrompt stores the prompt once by SHA-256 and points the
	// session at it.
	UpdateSystemPrompt(ctx context.Context, id, prompt string) error
	// UpdateTokenCounts adds (or sets) token, call and cost totals.
	UpdateTokenCounts(ctx context.Context, id string, u TokenUpdate) error
	// ResolveSessionID returns the id matching an exact id or a unique prefix.
	ResolveSessionID(ctx context.Context, idOrPrefix string) (string, error)
	// Meta returns a state_meta value and whether the key exists.
	Meta(ctx context.Context, key string) (string, bool, error)
	// SetMeta upserts a state_meta value.
	SetMeta(ctx context.Context, key, value string) error

	// AppendMessage appends one message and returns its id.
	AppendMessage(ctx context.Context, m NewMessage) (int64, error)
	// AppendMessages appends all messages to one session, or none of them.
	AppendMessages(ctx context.Context, sessionID string, ms []NewMessage) (int, error)
	// Messages returns a session's messages in id order.
	Messages(ctx context.Context, sessionID string, f MessageFilter) ([]*Message, error)
	// Conversation returns a session's messages in the OpenAI chat format.
	Conversation(ctx context.Context, sessionID string, o ConversationOptions) ([]map[string]any, error)

	// Search finds messages matching an FTS5-style query (sanitised first;
	// CJK text is routed to the bigram, trigram or substring search). A
	// query of more than MaxQueryTerms terms is EINVALID; a search still
	// running at ctx's deadline is stopped with ETIMEOUT.
	Search(ctx context.Context, query string, o SearchOptions) ([]SearchHit, error)

	// SetTitle sets a session's user title ("" clears it); titles are unique.
	SetTitle(ctx context.Context, id, title string) error
	// ResolveTitle returns the session a title names (the latest "title #N").
	ResolveTitle(ctx context.Context, title string) (string, error)
	// ListSessions lists sessions and returns the page and the total count.
	ListSessions(ctx context.Context, o ListOptions) ([]SessionSummary, int, error)
	// Lineage returns the tree of sessions id belongs to, from its root.
	Lineage(ctx context.Context, id string) (*LineageNode, error)
	// DeleteSession deletes a session with its messages and delegate
	// children, and returns the ids deleted.
	DeleteSession(ctx context.Context, id string) ([]string, error)
	// Prune deletes (or with DryRun lists) ended sessions inactive since
	// before o.Before.
	Prune(ctx context.Context, o PruneOptions) ([]PruneCandidate, error)
	// SetArchived and SetPinned flag a session's whole compression chain.
	SetArchived(ctx context.Context, id string, archived bool) error
	SetPinned(ctx context.Context, id string, pinned bool) error
	// ClearMessages deletes a session's messages and keeps the session.
	ClearMessages(ctx context.Context, id string) (int64, error)

	// Close releases the store's connections.
	Close() error
}

// ConversationOptions modify Store.Conversation.
type ConversationOptions struct {
	IncludeAncestors bool // prepend the compression lineage, root first
	IncludeInactive  bool // include rows archived by compaction
	IncludeRowIDs    bool // add "_row_id" to every message
}
