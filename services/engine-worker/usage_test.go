package worker

import (
	"math"
	"testing"

	"clopen.dev/pkg/events"
)

func TestPriced(t *testing.T) {
	u := events.TokenUsage{InputTokens: 2_000_000, OutputTokens: 100_000, CacheReadInputTokens: 1_000_000, CacheCreationInputTokens: 500_000}
	price := &events.ModelCost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	// 2 × 3 + 0.1 × 15 + 1 × 0.3 + 0.5 × 3.75
	if got, want := priced(u, price), 6+1.5+0.3+1.875; math.Abs(got-want) > 1e-9 {
		t.Errorf("priced = %v, want %v", got, want)
	}
	if got := priced(u, nil); got != 0 {
		t.Errorf("priced without a price = %v, want 0", got)
	}
}
