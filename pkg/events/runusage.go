package events

import "errors"

// RunUsage is a running turn's usage so far, from one source:
// {"type":"usage","source","usage","costUsd"}. Each report is the run's
// total up to now (never a delta), so a lost or repeated one does no harm;
// the newest report of a source replaces the previous. The worker publishes
// the model proxy's count (source "proxy") about once a second while it
// changes; an adapter may publish its engine's own running count (source
// "engine"). streammgr keeps the latest on the run, where budget
// enforcement (its admission and its budget watch) reads it before the run
// has ended; the terminal run_state and result carry the final numbers.
type RunUsage struct {
	Source UsageSource
	Usage  TokenUsage
	// CostUSD is the cost so far in US dollars: the engine's own figure, or
	// for the proxy the count priced with the model's catalog price; 0 when
	// not known.
	CostUSD float64
}

// UsageSource says who counted a RunUsage.
type UsageSource string

// The usage sources. The proxy's count is the provider's own report, so it
// wins over the engine's when a run has both.
const (
	UsageFromProxy  UsageSource = "proxy"
	UsageFromEngine UsageSource = "engine"
)

// Valid reports whether s is proxy or engine.
func (s UsageSource) Valid() bool { return s == UsageFromProxy || s == UsageFromEngine }

// TypeUsage is RunUsage's discriminator.
const TypeUsage = "usage"

// OutputType implements Output.
func (RunUsage) OutputType() string { return TypeUsage }

func (RunUsage) sessionID() string { return "" }

// MarshalJSON implements json.Marshaler.
func (u RunUsage) MarshalJSON() ([]byte, error) {
	if err := checkEnum("source", u.Source, true); err != nil {
		return nil, encodeErr(TypeUsage, err)
	}
	if u.CostUSD < 0 {
		return nil, encodeErr(TypeUsage, errors.New("costUsd: negative"))
	}
	return marshal(struct {
		Type    string      `json:"type"`
		Source  UsageSource `json:"source"`
		Usage   TokenUsage  `json:"usage"`
		CostUSD float64     `json:"costUsd"`
	}{TypeUsage, u.Source, u.Usage, u.CostUSD})
}

// UnmarshalJSON decodes a usage report strictly, as DecodeOutput does.
func (u *RunUsage) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, u) }

func decodeRunUsage(d *dec) Output {
	u := RunUsage{Source: readEnum[UsageSource](d, "source", true), CostUSD: d.float("costUsd")}
	if u.CostUSD < 0 {
		d.failf("costUsd", "negative")
	}
	if got := decodeUsage(d, "usage"); got != nil {
		u.Usage = *got
	}
	return u
}
