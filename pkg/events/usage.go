package events

// TokenUsage counts the tokens of one model call or, summed with Add, of a
// turn. On the wire it is
// {"inputTokens","outputTokens","cacheCreationInputTokens","cacheReadInputTokens"}.
type TokenUsage struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// Add returns the field-by-field sum of u and v.
func (u TokenUsage) Add(v TokenUsage) TokenUsage {
	return TokenUsage{
		InputTokens:              u.InputTokens + v.InputTokens,
		OutputTokens:             u.OutputTokens + v.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens + v.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens + v.CacheReadInputTokens,
	}
}

// decodeUsage reads key as a TokenUsage; missing or null is nil.
func decodeUsage(d *dec, key string) *TokenUsage {
	u, ok := d.optObj(key)
	if !ok {
		return nil
	}
	return &TokenUsage{
		InputTokens:              u.int64("inputTokens"),
		OutputTokens:             u.int64("outputTokens"),
		CacheCreationInputTokens: u.int64("cacheCreationInputTokens"),
		CacheReadInputTokens:     u.int64("cacheReadInputTokens"),
	}
}
