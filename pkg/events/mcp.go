package events

import "time"

// External MCP servers, under svc.artifacts.mcp.servers.<op>. A server
// belongs to a tenant (ProjectID "") or to one of its projects; a project's
// server hides the tenant's server of the same slug in that project.
const (
	OpMCPServersList   = "mcp.servers.list"
	OpMCPServersGet    = "mcp.servers.get"
	OpMCPServersPut    = "mcp.servers.put"
	OpMCPServersDelete = "mcp.servers.delete"
	// OpMCPServersResolve returns a server with its env and headers in
	// clear, for the MCP bridge that runs or reaches it (a run's, with its
	// dispatch token; a probe's, with the caller's token the gateway
	// signed); nobody else may publish it.
	OpMCPServersResolve = "mcp.servers.resolve"
)

// MCPBridgeService is the micro service name of the MCP bridge.
const MCPBridgeService = "mcpbridge"

// OpMCPServersProbe, under svc.mcpbridge, checks a server as a run would
// reach it (initialize, then tools/list), for the gateway's status route.
// Its request is an MCPServerRef, its reply an MCPServerStatus.
const OpMCPServersProbe = "mcp.servers.probe"

// MCPServerStatus is what a probe found: State is ok, needs_auth (401,
// 403 or an authentication challenge), needs_config (an env variable or
// header without a value), unreachable or error; Reason says why when not
// ok, Tools how many tools the server listed when ok.
type MCPServerStatus struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Tools  int    `json:"tools,omitempty"`
}

// MCPInternalServer is the name under which every run gets Clopen's own
// tools (mcp__clopen__<tool>); no external server may take it as a slug.
const MCPInternalServer = "clopen"

// MCPInternalTools are the tools the MCP bridge serves as MCPInternalServer.
var MCPInternalTools = []string{"ask_user", "notify", "memory_write", "memory_read", "memory_search"}

// MCPAskAlias is the name under which the bridge offers ask_user to an
// engine that hides an MCP tool sharing the bare name of a built-in tool
// it turned off: Gemini CLI in ACP mode denies its own ask_user, and with
// it every tool of that name. Adapters save a call of the alias as
// ask_user (CanonicalMCPAsk).
const MCPAskAlias = "ask_question"

// MCPAskToolName is the name the bridge gives ask_user for engine.
func MCPAskToolName(engine EngineType) string {
	if engine == EngineGemini {
		return MCPAskAlias
	}
	return "ask_user"
}

// CanonicalMCPAsk returns name, with a call of the bridge's ask_user alias
// (mcp__clopen__ask_question) named mcp__clopen__ask_user.
func CanonicalMCPAsk(name string) string {
	if name == MCPToolPrefix+MCPInternalServer+"__"+MCPAskAlias {
		return MCPToolPrefix + MCPInternalServer + "__ask_user"
	}
	return name
}

// MaxRunMCPServers is how many external MCP servers one run gets at most
// (the first by slug): their slugs travel in every mcp token of the run,
// which must stay within a token's size.
const MaxRunMCPServers = 32

// MCPTransport is how an external MCP server is reached.
type MCPTransport string

// The transports.
const (
	// MCPStdio is a command the bridge starts in a sandbox and speaks
	// MCP to over its stdin and stdout.
	MCPStdio MCPTransport = "stdio"
	// MCPHTTP is a remote server speaking MCP Streamable HTTP.
	MCPHTTP MCPTransport = "http"
)

// Valid reports whether t is a known transport.
func (t MCPTransport) Valid() bool { return t == MCPStdio || t == MCPHTTP }

// MCPServerDef is an external MCP server as clients see it: its env and
// headers are named, never shown (they are sealed at rest).
type MCPServerDef struct {
	ID string `json:"id"`
	// ProjectID is "" for a tenant's server.
	ProjectID string       `json:"projectId,omitempty"`
	Slug      string       `json:"slug"`
	Name      string       `json:"name"`
	Transport MCPTransport `json:"transport"`
	// URL is the remote server's endpoint (http only).
	URL string `json:"url,omitempty"`
	// Command and Args start the server (stdio only).
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// EnvNames and HeaderNames name the sealed env variables (stdio) and
	// HTTP headers (http), sorted.
	EnvNames    []string    `json:"envNames"`
	HeaderNames []string    `json:"headerNames"`
	Exposure    MCPExposure `json:"exposure"`
	// Disabled keeps the server defined but out of every run.
	Disabled bool `json:"disabled,omitempty"`
	// ManagedBy is "integration:<id>" for a server an integration account
	// projects: it changes with the account, never directly.
	ManagedBy string    `json:"managedBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// MCPExposure narrows which engines see a server and which of its tools.
type MCPExposure struct {
	// Engines are the engines whose runs get the server; empty is all.
	Engines []EngineType `json:"engines,omitempty"`
	// DisabledTools are tool names hidden from the runs of an engine; the
	// key "*" hides them from every engine.
	DisabledTools map[string][]string `json:"disabledTools,omitempty"`
}

// Allows reports whether a run of engine sees the server at all.
func (e MCPExposure) Allows(engine string) bool {
	if len(e.Engines) == 0 {
		return true
	}
	for _, en := range e.Engines {
		if string(en) == engine {
			return true
		}
	}
	return false
}

// Hides reports whether tool is hidden from a run of engine.
func (e MCPExposure) Hides(engine, tool string) bool {
	for _, key := range []string{"*", engine} {
		for _, t := range e.DisabledTools[key] {
			if t == tool {
				return true
			}
		}
	}
	return false
}

// MCPServerRef names one server: the tenant's (ProjectID "") or a
// project's.
type MCPServerRef struct {
	Caller
	ProjectID string `json:"projectId,omitempty"`
	Slug      string `json:"slug"`
}

// MCPServersList lists the tenant's servers (ProjectID "") or one
// project's own servers.
type MCPServersList struct {
	Caller
	ProjectID string `json:"projectId,omitempty"`
}

// MCPServerPut creates or replaces the server of Server's scope and slug.
// Env and Headers replace the sealed values when not nil; nil keeps the
// stored ones (an update that does not resend its secrets keeps them), and
// an empty map clears them.
type MCPServerPut struct {
	Caller
	Server  MCPServerDef      `json:"server"`
	Env     map[string]string `json:"env"`
	Headers map[string]string `json:"headers"`
}

// ResolvedMCPServer is a server with its secrets in clear: what the bridge
// needs to start or reach it. It never leaves the bridge.
type ResolvedMCPServer struct {
	MCPServerDef
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// NeedsAuth, when set, says why the server's OAuth grant no longer
	// works (its refresh was refused): a person must authorize it again,
	// and the bridge tells the run so instead of calling it.
	NeedsAuth string `json:"needsAuth,omitempty"`
	// Expires is when the Authorization header the server's OAuth grant
	// gave expires (zero: no grant, or a token without an expiry). The
	// bridge resolves the server again before then, which refreshes it.
	Expires time.Time `json:"expires,omitzero"`
}

// Signing in to a remote MCP server that wants OAuth, under
// svc.artifacts.mcp.oauth.<op>. Start runs discovery and registration and
// keeps the pending sign-in; Complete is the callback's, which carries no
// API key: the caller names only the tenant the signed state names, and
// artifacts verifies the state before it trusts it.
const (
	OpMCPOAuthStart    = "mcp.oauth.start"
	OpMCPOAuthComplete = "mcp.oauth.complete"
)

// MCPOAuthStart starts a sign-in to a server of the tenant or a project.
// ClientID (and ClientSecret) name a client registered by hand with the
// authorization server, for one that offers no dynamic registration.
type MCPOAuthStart struct {
	MCPServerRef
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
}

// MCPOAuthStarted is where to send the user's browser.
type MCPOAuthStarted struct {
	AuthorizationURL string `json:"authorizationUrl"`
}

// MCPOAuthComplete is the callback's query (code, state, and iss or error
// and error_description), for the tenant its state names.
type MCPOAuthComplete struct {
	Caller
	Query map[string][]string `json:"query"`
}
