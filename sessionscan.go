package sessiondb

// ScanTargets returns pointers to s's fields in the order of the session
// column list both backends select (sessionColumns in sqlite and postgres:
// every column of Hermes' sessions table, the system prompt resolved), for
// rows.Scan.
func (s *Session) ScanTargets() []any {
	return []any{&s.ID, &s.Source, &s.CreatedSource, &s.UserID, &s.SessionKey, &s.ChatID, &s.ChatType,
		&s.ThreadID, &s.DisplayName, &s.OriginJSON, &s.ExpiryFinalized, &s.Model, &s.ModelConfig,
		&s.SystemPrompt, &s.SystemPromptHash, &s.ParentSessionID, &s.StartedAt, &s.EndedAt, &s.EndReason,
		&s.MessageCount, &s.ToolCallCount, &s.APICallCount,
		&s.InputTokens, &s.OutputTokens, &s.CacheReadTokens, &s.CacheWriteTokens, &s.ReasoningTokens,
		&s.BillingProvider, &s.BillingBaseURL, &s.BillingMode, &s.EstimatedCostUSD, &s.ActualCostUSD,
		&s.CostStatus, &s.CostSource, &s.PricingVersion, &s.Cwd, &s.GitBranch, &s.GitRepoRoot,
		&s.GitMetadataGeneration, &s.Title, &s.TitleSource, &s.LastActivityAt,
		&s.LastActivityDescription, &s.LastActivityProvenance, &s.HandoffState, &s.HandoffPlatform,
		&s.HandoffError, &s.CompressionFailureCooldownUntil, &s.CompressionFailureError,
		&s.CompressionFallbackStreak, &s.CompressionIneffectiveCount,
		&s.CompressionRecoveryDeadline, &s.CompressionOverloadStreak, &s.ProfileName,
		&s.TransportProfile, &s.RewindCount, &s.Archived, &s.AutoArchived,
		&s.Pinned, &s.Hidden, &s.LastReadAt, &s.ToolNames}
}
