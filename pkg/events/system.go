package events

// SystemInit opens an engine session:
// {"type":"system_init","sessionId","model","engine","tools","mcpServers"}.
// Nil Tools and MCPServers encode as [].
type SystemInit struct {
	SessionID  string
	Model      string
	Engine     EngineType // "" when unknown
	Tools      []string   // the tool names the engine offers, as it reports them
	MCPServers []MCPServer
}

// MCPServer is the state of one MCP server at session start: {"name","status"}.
type MCPServer struct {
	Name   string    `json:"name"`
	Status MCPStatus `json:"status"`
}

// MCPStatus is the connection state of an MCP server. The vocabulary is
// append-only; decoding normalises anything outside it to MCPDisconnected (as
// the original's toMcpServerStatus does), so an older reader never refuses a
// system_init for a newer status.
type MCPStatus string

// The MCP statuses.
const (
	MCPConnected    MCPStatus = "connected"
	MCPPending      MCPStatus = "pending"
	MCPNeedsAuth    MCPStatus = "needs-auth"
	MCPFailed       MCPStatus = "failed"
	MCPDisabled     MCPStatus = "disabled"
	MCPDisconnected MCPStatus = "disconnected"
)

// Valid reports whether s is one of the MCP statuses.
func (s MCPStatus) Valid() bool {
	return oneOf(s, []MCPStatus{MCPConnected, MCPPending, MCPNeedsAuth, MCPFailed, MCPDisabled, MCPDisconnected})
}

// Soft reports whether s is a state that may still resolve by itself
// (pending, needs-auth): not worth a "connection failed" warning.
func (s MCPStatus) Soft() bool { return s == MCPPending || s == MCPNeedsAuth }

// NormalizeMCPStatus returns s as an MCPStatus; anything unknown or empty
// becomes MCPDisconnected.
func NormalizeMCPStatus(s string) MCPStatus {
	if st := MCPStatus(s); st.Valid() {
		return st
	}
	return MCPDisconnected
}

// OutputType implements Output.
func (SystemInit) OutputType() string { return TypeSystemInit }

func (s SystemInit) sessionID() string { return s.SessionID }

// MarshalJSON implements json.Marshaler. Statuses are normalised as
// NormalizeMCPStatus does.
func (s SystemInit) MarshalJSON() ([]byte, error) {
	if err := checkEnum("engine", s.Engine, false); err != nil {
		return nil, encodeErr(TypeSystemInit, err)
	}
	tools := s.Tools
	if tools == nil {
		tools = []string{}
	}
	servers := make([]MCPServer, len(s.MCPServers))
	for i, srv := range s.MCPServers {
		servers[i] = MCPServer{Name: srv.Name, Status: NormalizeMCPStatus(string(srv.Status))}
	}
	return marshal(struct {
		Type       string      `json:"type"`
		SessionID  string      `json:"sessionId"`
		Model      string      `json:"model"`
		Engine     EngineType  `json:"engine"`
		Tools      []string    `json:"tools"`
		MCPServers []MCPServer `json:"mcpServers"`
	}{TypeSystemInit, s.SessionID, s.Model, s.Engine, tools, servers})
}

// UnmarshalJSON decodes a system_init strictly, as DecodeOutput does.
func (s *SystemInit) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, s) }

func decodeSystemInit(d *dec) Output {
	s := SystemInit{
		SessionID: d.str("sessionId"),
		Model:     d.str("model"),
		Engine:    readEnum[EngineType](d, "engine", false),
		Tools:     d.strs("tools"),
	}
	d.each("mcpServers", func(e *dec) {
		s.MCPServers = append(s.MCPServers, MCPServer{Name: e.str("name"), Status: NormalizeMCPStatus(e.str("status"))})
	})
	return s
}

// RateLimit reports the account's rate-limit state:
// {"type":"rate_limit","sessionId","status","utilization","resetsAt","rateLimitType"}.
// ResetsAt is Unix seconds, 0 (null) when unknown; an empty RateLimitType is
// null.
type RateLimit struct {
	SessionID     string
	Status        RateLimitStatus
	Utilization   float64 // fraction of the window used, 0..1
	ResetsAt      int64
	RateLimitType RateLimitType
}

// RateLimitStatus is whether the provider refused the call or only warns.
// Claude's "allowed" is never emitted.
type RateLimitStatus string

// The rate-limit statuses.
const (
	RateLimitRejected       RateLimitStatus = "rejected"
	RateLimitAllowedWarning RateLimitStatus = "allowed_warning"
)

// Valid reports whether s is rejected or allowed_warning.
func (s RateLimitStatus) Valid() bool { return s == RateLimitRejected || s == RateLimitAllowedWarning }

// RateLimitType names the window a rate limit applies to.
type RateLimitType string

// The rate-limit windows.
const (
	RateLimitFiveHour                RateLimitType = "five_hour"
	RateLimitSevenDay                RateLimitType = "seven_day"
	RateLimitSevenDayOpus            RateLimitType = "seven_day_opus"
	RateLimitSevenDaySonnet          RateLimitType = "seven_day_sonnet"
	RateLimitOverage                 RateLimitType = "overage"
	RateLimitSevenDayOverageIncluded RateLimitType = "seven_day_overage_included"
)

// Valid reports whether t is one of the rate-limit windows.
func (t RateLimitType) Valid() bool {
	return oneOf(t, []RateLimitType{RateLimitFiveHour, RateLimitSevenDay, RateLimitSevenDayOpus,
		RateLimitSevenDaySonnet, RateLimitOverage, RateLimitSevenDayOverageIncluded})
}

// OutputType implements Output.
func (RateLimit) OutputType() string { return TypeRateLimit }

func (r RateLimit) sessionID() string { return r.SessionID }

// rateLimitWire is the part of rate_limit and chat:rate_limit they share.
type rateLimitWire struct {
	Status        RateLimitStatus `json:"status"`
	Utilization   float64         `json:"utilization"`
	ResetsAt      *int64          `json:"resetsAt"`
	RateLimitType *string         `json:"rateLimitType"`
}

func newRateLimitWire(s RateLimitStatus, u float64, resets int64, t RateLimitType) (rateLimitWire, error) {
	w := rateLimitWire{Status: s, Utilization: u, RateLimitType: nullable(string(t))}
	if resets != 0 {
		w.ResetsAt = &resets
	}
	return w, firstErr(checkEnum("status", s, true), checkEnum("rateLimitType", t, false))
}

// MarshalJSON implements json.Marshaler.
func (r RateLimit) MarshalJSON() ([]byte, error) {
	w, err := newRateLimitWire(r.Status, r.Utilization, r.ResetsAt, r.RateLimitType)
	if err != nil {
		return nil, encodeErr(TypeRateLimit, err)
	}
	return marshal(struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		rateLimitWire
	}{TypeRateLimit, r.SessionID, w})
}

// UnmarshalJSON decodes a rate_limit strictly, as DecodeOutput does.
func (r *RateLimit) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, r) }

func decodeRateLimit(d *dec) Output {
	return RateLimit{
		SessionID:     d.str("sessionId"),
		Status:        readEnum[RateLimitStatus](d, "status", true),
		Utilization:   d.float("utilization"),
		ResetsAt:      d.int64("resetsAt"),
		RateLimitType: readEnum[RateLimitType](d, "rateLimitType", false),
	}
}
