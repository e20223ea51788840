package sessiondb

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Session is one row of the sessions table: one conversation segment. A
// compression splits a conversation into a chain of sessions linked through
// ParentSessionID. Nullable columns are pointers; the JSON names are the
// column names, so a Session marshals to the row as Hermes stores it.
type Session struct {
	ID               string   `json:"id"`
	Source           string   `json:"source"`
	CreatedSource    *string  `json:"created_source"`
	UserID           *string  `json:"user_id"`
	SessionKey       *string  `json:"session_key"`
	ChatID           *string  `json:"chat_id"`
	ChatType         *string  `json:"chat_type"`
	ThreadID         *string  `json:"thread_id"`
	DisplayName      *string  `json:"display_name"`
	OriginJSON       *string  `json:"origin_json"`
	ExpiryFinalized  *int64   `json:"expiry_finalized"`
	Model            *string  `json:"model"`
	ModelConfig      *string  `json:"model_config"`
	SystemPrompt     *string  `json:"system_prompt"` // resolved from system_prompts by hash when stored there
	SystemPromptHash *string  `json:"system_prompt_hash"`
	ParentSessionID  *string  `json:"parent_session_id"`
	StartedAt        float64  `json:"started_at"`
	EndedAt          *float64 `json:"ended_at"`
	EndReason        *string  `json:"end_reason"`
	MessageCount     int64    `json:"message_count"`
	ToolCallCount    int64    `json:"tool_call_count"`
	APICallCount     int64    `json:"api_call_count"`

	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`

	BillingProvider  *string  `json:"billing_provider"`
	BillingBaseURL   *string  `json:"billing_base_url"`
	BillingMode      *string  `json:"billing_mode"`
	EstimatedCostUSD *float64 `json:"estimated_cost_usd"`
	ActualCostUSD    *float64 `json:"actual_cost_usd"`
	CostStatus       *string  `json:"cost_status"`
	CostSource       *string  `json:"cost_source"`
	PricingVersion   *string  `json:"pricing_version"`

	Cwd                   *string `json:"cwd"`
	GitBranch             *string `json:"git_branch"`
	GitRepoRoot           *string `json:"git_repo_root"`
	GitMetadataGeneration int64   `json:"git_metadata_generation"`

	Title                   *string  `json:"title"`
	TitleSource             *string  `json:"title_source"`
	LastActivityAt          *float64 `json:"last_activity_at"`
	LastActivityDescription *string  `json:"last_activity_description"`
	LastActivityProvenance  *string  `json:"last_activity_provenance"`

	HandoffState                    *string  `json:"handoff_state"`
	HandoffPlatform                 *string  `json:"handoff_platform"`
	HandoffError                    *string  `json:"handoff_error"`
	CompressionFailureCooldownUntil *float64 `json:"compression_failure_cooldown_until"`
	CompressionFailureError         *string  `json:"compression_failure_error"`
	CompressionFallbackStreak       int64    `json:"compression_fallback_streak"`
	CompressionIneffectiveCount     int64    `json:"compression_ineffective_count"`
	CompressionRecoveryDeadline     *float64 `json:"compression_recovery_deadline"`
	CompressionOverloadStreak       int64    `json:"compression_overload_streak"`

	ProfileName      *string  `json:"profile_name"`
	TransportProfile *string  `json:"transport_profile"`
	RewindCount      int64    `json:"rewind_count"`
	Archived         int64    `json:"archived"`
	AutoArchived     int64    `json:"auto_archived"`
	Pinned           int64    `json:"pinned"`
	Hidden           int64    `json:"hidden"`
	LastReadAt       *float64 `json:"last_read_at"`
	ToolNames        *string  `json:"tool_names"`

	// ResetFrom and BranchedFrom are lifted out of ModelConfig when present,
	// as Hermes' get_session does.
	ResetFrom    *string `json:"_reset_from,omitempty"`
	BranchedFrom *string `json:"_branched_from,omitempty"`
}

// NewSession holds the arguments of Store.CreateSession. Only ID and Source
// are required; empty strings mean "not given" (stored as NULL).
type NewSession struct {
	ID              string
	Source          string
	Model           string
	ModelConfig     string // JSON object text
	SystemPrompt    string
	UserID          string
	SessionKey      string
	ChatID          string
	ChatType        string
	ThreadID        string
	ParentSessionID string
	Cwd             string
	ProfileName     string
	GitRepoRoot     string
	OriginJSON      string
	DisplayName     string
	// StartedAt overrides the store's clock (Unix seconds) when non-zero.
	StartedAt float64
}

// TokenUpdate holds the arguments of Store.UpdateTokenCounts. Counts are
// added to the stored totals unless Absolute is set, in which case they
// replace them. Model is back-filled only when the session has none; the
// route fields select the per-model row of session_model_usage.
type TokenUpdate struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	APICallCount     int64
	EstimatedCostUSD *float64
	ActualCostUSD    *float64
	CostStatus       string
	CostSource       string
	PricingVersion   string
	Model            string
	BillingProvider  string
	BillingBaseURL   string
	BillingMode      string
	Task             string
	Absolute         bool
}

// End reasons with a meaning of their own.
const (
	EndReasonCompression = "compression" // the session continues in a child session
)

// NewSessionID returns a Hermes-style session id, YYYYMMDD_HHMMSS_xxxxxx: the
// local time t followed by six random hex digits.
func NewSessionID(t time.Time) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return t.Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}
