package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"

	"clopen.dev/services/gateway/internal/identity"
)

// wsPath is the WebSocket route, the one that also accepts ?access_token=.
const wsPath = "/v1/ws"

// Route is one entry of the API: the mux serves it and the OpenAPI document
// describes it, both from this table.
type Route struct {
	Method  string
	Path    string // ServeMux pattern syntax, which is also OpenAPI's: /v1/projects/{id}
	Summary string
	Tag     string
	Auth    bool // needs an API key
	Query   []Param
	// Errors documents error responses particular to the route, by status.
	Errors map[int]string
	ep     endpoint
}

// withErrors returns rt documenting the error responses errs.
func withErrors(rt Route, errs map[int]string) Route {
	rt.Errors = errs
	return rt
}

// Status is the route's success status.
func (rt Route) Status() int { return rt.ep.status }

// Routes returns the route table: the whole API. Tests and tools may call it
// on a Server built with empty Deps, since listing the routes runs no
// handler.
func (s *Server) Routes() []Route { return s.routes() }

// managedServer is the error of the routes that change an MCP server.
var managedServer = map[int]string{http.StatusConflict: "an integration projects the server (managedBy names it): change or disconnect the integration"}

// sourceErrors are the errors of the routes that clone a git source.
var sourceErrors = map[int]string{
	http.StatusBadRequest: "the URL is refused (only https, without credentials) or the branch name is invalid",
	http.StatusUnprocessableEntity: "git_auth_failed: the credential was refused; git_branch_not_found: no such branch; " +
		"git_not_a_repository: the URL is no git repository",
	http.StatusServiceUnavailable: "no engine worker is running to clone the repository",
}

// oauthStartErrors are the errors of the routes that start an MCP sign-in.
var oauthStartErrors = map[int]string{
	http.StatusBadRequest: "the server is a stdio server, or oauth_no_registration: its authorization server offers no " +
		"dynamic registration (the message names the redirect URI to register a client with; send its clientId)",
	http.StatusConflict:            "public_url_unset: CLOPEN_PUBLIC_URL is not set, so there is no callback to name",
	http.StatusUnprocessableEntity: "oauth_metadata: the server's or its authorization server's metadata is missing or untrustworthy",
	http.StatusBadGateway:          "unreachable: the server or its authorization server could not be reached",
}

func (s *Server) routes() []Route {
	const (
		ok      = http.StatusOK
		created = http.StatusCreated
		queued  = http.StatusAccepted
		gone    = http.StatusNoContent
	)
	pub := func(method, path, summary string, ep endpoint) Route {
		return Route{Method: method, Path: path, Summary: summary, Tag: "service", ep: ep}
	}
	key := func(tag, method, path, summary string, ep endpoint, query ...Param) Route {
		return Route{Method: method, Path: path, Summary: summary, Tag: tag, Auth: true, Query: query, ep: ep}
	}
	routes := []Route{
		pub("GET", "/healthz", "Liveness: answers while the process runs", raw(s.health, healthType)),
		pub("GET", "/readyz", "Readiness: 200 while every dependency answers, else 503 naming the failing checks", raw(s.health, healthType)),
		pub("GET", "/openapi.json", "This document", raw(http.HandlerFunc(s.serveOpenAPI), anyType)),

		key("identity", "GET", "/v1/me", "The key's user and tenant", handle(s, ok, s.me)),
		key("identity", "GET", "/v1/users", "The tenant's users (admins)", handle(s, ok, s.listUsers)),
		key("identity", "POST", "/v1/users", "Add a user to the tenant (admins)", handle(s, created, s.createUser)),
		key("identity", "GET", "/v1/api-keys", "The caller's API keys, never their secrets", handle(s, ok, s.listKeys), userIDParam),
		key("identity", "POST", "/v1/api-keys", "Mint an API key; the secret is in this response only", handle(s, created, s.createKey)),
		key("identity", "DELETE", "/v1/api-keys/{id}", "Revoke an API key (own keys; admins any of the tenant)", handle(s, gone, s.revokeKey)),

		key("projects", "GET", "/v1/projects", "The projects the caller may use (admins: all of the tenant)", handle(s, ok, s.listProjects)),
		withErrors(key("projects", "POST", "/v1/projects", "Create a project, optionally cloning a git source as its base; the caller becomes its owner", handle(s, created, s.createProject)),
			sourceErrors),
		key("projects", "GET", "/v1/projects/{id}", "A project", handle(s, ok, s.getProject)),
		key("projects", "PATCH", "/v1/projects/{id}", "Rename a project or set its default profile (owners, admins)", handle(s, ok, s.updateProject)),
		key("projects", "DELETE", "/v1/projects/{id}", "Delete a project and its chat sessions (owners, admins)", handle(s, gone, s.deleteProject)),
		withErrors(key("projects", "PUT", "/v1/projects/{id}/source", "Set the project's git source and import it as its base (owners, admins); the credential is sealed, never returned", handle(s, ok, s.putSource)),
			sourceErrors),
		withErrors(key("projects", "POST", "/v1/projects/{id}/archive", "Make an uploaded tar, tar.gz or zip (the raw body; format from Content-Type or the bytes) the project's base (owners, admins)", s.archiveEndpoint()),
			map[int]string{http.StatusBadRequest: "the archive is refused: an entry that escapes it (.., absolute, a link out), a special file, " +
				"or past the unpacked size or entry limits; the message names the entry and the reason, and the base is unchanged",
				http.StatusRequestEntityTooLarge: "the archive is larger than the gateway's archive cap (CLOPEN_MAX_ARCHIVE_BYTES)",
				http.StatusConflict:              "the base changed meanwhile; read the project again and retry"}),
		key("projects", "GET", "/v1/projects/{id}/members", "A project's members", handle(s, ok, s.listMembers)),
		key("projects", "POST", "/v1/projects/{id}/members", "Add a member or change its role (owners, admins)", handle(s, created, s.addMember)),
		key("projects", "DELETE", "/v1/projects/{id}/members/{userId}", "Remove a member (owners, admins); the last owner stays", handle(s, gone, s.removeMember)),

		key("sessions", "GET", "/v1/projects/{id}/sessions", "A project's chat sessions, newest first", handle(s, ok, s.listSessions), limitParam, searchParam),
		key("sessions", "POST", "/v1/projects/{id}/sessions", "Create a chat session", handle(s, created, s.createSession)),
		key("sessions", "GET", "/v1/sessions/{id}", "A chat session", handle(s, ok, s.getSession)),
		key("sessions", "PATCH", "/v1/sessions/{id}", "Change a session's title or engine selection", handle(s, ok, s.updateSession)),
		key("sessions", "DELETE", "/v1/sessions/{id}", "Delete a chat session", handle(s, gone, s.deleteSession)),
		key("sessions", "GET", "/v1/sessions/{id}/messages", "A page of the session's saved messages, in order", handle(s, ok, s.listMessages), afterRowParam, limitParam),
		withErrors(key("sessions", "POST", "/v1/sessions/{id}/messages", "Send a prompt: start a turn, or queue it behind the active one", handle(s, queued, s.sendMessage)),
			map[int]string{http.StatusGatewayTimeout: "streammgr did not answer in time; the turn may still start. The error names the " +
				"send's clientRequestId (the client's, else one the gateway made up): find the run by it in GET /v1/sessions/{id}/runs, " +
				"or send again with it to get the same run, never a second one",
				http.StatusInsufficientStorage: "workspace_quota: the tenant's sessions hold its quota of files; delete sessions to start new turns",
				http.StatusPaymentRequired: "budget_exhausted: a budget of the tenant is spent for its period; the error's budget says " +
					"the limit, what was spent and when the period resets (also in Retry-After), and nothing was queued",
				http.StatusTooManyRequests: "rate_limited: the key's rate limit is exhausted; tenant_queue_full: the turn would wait and " +
					"the tenant already has as many runs waiting as its limit allows. Both say when to retry in Retry-After"}),
		withErrors(key("sessions", "POST", "/v1/sessions/{id}/apply", "Apply the session's files to its project's base: what the session changed since it started is merged into the current base (owners, admins)", handle(s, ok, s.applySession)),
			map[int]string{http.StatusConflict: "Nothing was applied: a turn of the session is running (wait for it to end), the base changed " +
				"a file the session also changed differently since the session started (the message names the paths), or another apply " +
				"moved the base meanwhile (apply again)"}),
		key("sessions", "GET", "/v1/sessions/{id}/runs", "The session's runs, oldest first", handle(s, ok, s.listRuns), limitParam),
		key("sessions", "GET", "/v1/sessions/{id}/checkpoints", "The turns on the session's HEAD, oldest first, each with the snapshot of the files it left and what it changed", handle(s, ok, s.checkpoints)),
		withErrors(key("sessions", "POST", "/v1/sessions/{id}/restore", "Move HEAD back to one of the session's messages: the next turn continues from its conversation and the files its turn left", handle(s, ok, s.restore)),
			map[int]string{http.StatusConflict: "a turn is running; restore once it ends"}),
		key("sessions", "GET", "/v1/sessions/{id}/snapshot", "Messages, the active run and its partial text, and the CHAT cursor live frames continue from", handle(s, ok, s.snapshot)),
		withErrors(key("sessions", "POST", "/v1/sessions/{id}/push", "Push the session's files (its HEAD) to a branch of its project's git repository, committed as the caller", handle(s, ok, s.pushSession)),
			map[int]string{http.StatusConflict: "project has no git source",
				http.StatusUnprocessableEntity: sourceErrors[http.StatusUnprocessableEntity],
				http.StatusBadGateway:          "git_failed: the remote refused the push (the message quotes git)"}),
		key("sessions", "POST", "/v1/sessions/{id}/cancel", "Cancel a run (default: the active one): soft stop, then kill", handle(s, queued, s.cancel)),
		key("sessions", "POST", "/v1/sessions/{id}/interrupt", "Interrupt a run (default: the active one): soft stop, session stays resumable", handle(s, queued, s.interrupt)),
		key("sessions", "POST", "/v1/sessions/{id}/answer", "Answer the run's parked question or permission prompt", handle(s, queued, s.answer)),

		key("runs", "GET", "/v1/runs/{id}", "A run: its state, timings, the usage its agent reported (usage) and the usage the model proxy counted from the provider (meteredUsage, null for a run that did not go through the proxy)", handle(s, ok, s.getRun)),
		key("usage", "GET", "/v1/usage", "Tokens, cost, runs and run time of the tenant's recorded runs (admins) or the caller's own (members), per group", handle(s, ok, s.usage), fromParam, toParam, groupByParam, usageProject),
		withErrors(key("runs", "POST", "/v1/runs/{id}/retry", "Retry a lost run: a new run of its session with the lost turn's prompt and engine selection, "+
			"from the files as they were when the lost turn began; its user message takes the lost one's place on HEAD. Queued behind the session's active run like a send; "+
			"a second retry of the same run returns the first", handle(s, queued, s.retryRun)),
			map[int]string{http.StatusConflict: "the run is not lost (the message names its state), or it was lost before its turn started",
				http.StatusPaymentRequired: "budget_exhausted: a budget of the tenant is spent; nothing was queued"}),
		key("runs", "GET", "/v1/runs/{id}/events", "A page of the run's stored engine events, in order", handle(s, ok, s.runEvents), afterEpochParam, afterSeqParam, limitParam),

		key("skills", "GET", "/v1/skills", "The tenant's skills, without their bodies", handle(s, ok, s.listSkills)),
		key("skills", "POST", "/v1/skills", "Create a skill from fields or a whole SKILL.md (admins)", handle(s, created, s.createSkill)),
		key("skills", "GET", "/v1/skills/{slug}", "A skill with its whole document", handle(s, ok, s.getSkill)),
		key("skills", "PUT", "/v1/skills/{slug}", "Replace a skill; unknown frontmatter keys are kept (admins)", handle(s, ok, s.replaceSkill)),
		key("skills", "DELETE", "/v1/skills/{slug}", "Delete a skill (admins)", handle(s, gone, s.deleteSkill)),
		key("skills", "POST", "/v1/skills/import-commands", "Import legacy commands as slash skills, idempotently (admins)", handle(s, ok, s.importCommands)),
		key("skills", "GET", "/v1/available-skills", "The \"/\" picker: skills the caller may invoke in a project under a profile", handle(s, ok, s.availableSkills), projectIDParam, profileIDParam),

		key("subagents", "GET", "/v1/subagents", "The tenant's subagents", handle(s, ok, s.listSubagents)),
		key("subagents", "POST", "/v1/subagents", "Create a subagent (admins)", handle(s, created, s.createSubagent)),
		key("subagents", "GET", "/v1/subagents/{slug}", "A subagent", handle(s, ok, s.getSubagent)),
		key("subagents", "PUT", "/v1/subagents/{slug}", "Replace a subagent (admins)", handle(s, ok, s.replaceSubagent)),
		key("subagents", "DELETE", "/v1/subagents/{slug}", "Delete a subagent (admins)", handle(s, gone, s.deleteSubagent)),

		key("instructions", "GET", "/v1/instructions", "The tenant's global instructions", handle(s, ok, s.getInstructions(tenantLayer))),
		key("instructions", "PUT", "/v1/instructions", "Save the global instructions; blank content deletes them (admins)", handle(s, ok, s.putInstructions(tenantLayer))),
		key("instructions", "GET", "/v1/projects/{id}/instructions", "A project's instructions", handle(s, ok, s.getInstructions(projectLayer))),
		key("instructions", "PUT", "/v1/projects/{id}/instructions", "Save a project's instructions (owners, admins)", handle(s, ok, s.putInstructions(projectLayer))),

		key("permissions", "GET", "/v1/permissions", "The tenant's global permission layer", handle(s, ok, s.getPermissions(tenantLayer))),
		key("permissions", "PUT", "/v1/permissions", "Save the global layer; empty allow and deny delete it (admins)", handle(s, ok, s.putPermissions(tenantLayer))),
		key("permissions", "GET", "/v1/projects/{id}/permissions", "A project's permission layer", handle(s, ok, s.getPermissions(projectLayer))),
		key("permissions", "PUT", "/v1/projects/{id}/permissions", "Save a project's layer (owners, admins)", handle(s, ok, s.putPermissions(projectLayer))),
		key("permissions", "GET", "/v1/projects/{id}/permissions/effective", "What a run gets: global, then project, then profile, merged (denies win)", handle(s, ok, s.effectivePermissions), profileIDParam),
		key("permissions", "GET", "/v1/profiles/{id}/permissions", "A profile's permission layer", handle(s, ok, s.getPermissions(profileLayer))),
		key("permissions", "PUT", "/v1/profiles/{id}/permissions", "Save a profile's layer (admins)", handle(s, ok, s.putPermissions(profileLayer))),

		key("profiles", "GET", "/v1/profiles", "The tenant's profiles with their items", handle(s, ok, s.listProfiles)),
		key("profiles", "POST", "/v1/profiles", "Create a profile: skills, subagents and MCP servers by slug (admins)", handle(s, created, s.createProfile)),
		key("profiles", "GET", "/v1/profiles/{id}", "A profile", handle(s, ok, s.getProfile)),
		key("profiles", "PUT", "/v1/profiles/{id}", "Replace a profile and its items (admins)", handle(s, ok, s.replaceProfile)),
		key("profiles", "DELETE", "/v1/profiles/{id}", "Delete a profile; projects defaulting to it have none (admins)", handle(s, gone, s.deleteProfile)),
		key("profiles", "GET", "/v1/projects/{id}/default-profile", "A project's default profile", handle(s, ok, s.getDefaultProfile)),
		key("profiles", "PUT", "/v1/projects/{id}/default-profile", "Set or clear a project's default profile (owners, admins)", handle(s, ok, s.setDefaultProfile)),

		key("mcp", "GET", "/v1/mcp-servers", "The tenant's external MCP servers; env and headers by name only", handle(s, ok, s.listMCPServers(tenantLayer))),
		key("mcp", "POST", "/v1/mcp-servers", "Add an external MCP server: stdio (command, args, env) or http (url, headers); env and headers are sealed and write-only (admins)", handle(s, created, s.createMCPServer(tenantLayer))),
		key("mcp", "GET", "/v1/mcp-servers/{slug}", "One of the tenant's MCP servers", handle(s, ok, s.getMCPServer(tenantLayer))),
		withErrors(key("mcp", "PUT", "/v1/mcp-servers/{slug}", "Replace an MCP server; env or headers left out are kept, {} clears them (admins)", handle(s, ok, s.replaceMCPServer(tenantLayer))), managedServer),
		withErrors(key("mcp", "DELETE", "/v1/mcp-servers/{slug}", "Delete an MCP server (admins)", handle(s, gone, s.deleteMCPServer(tenantLayer))), managedServer),
		withErrors(key("mcp", "POST", "/v1/mcp-servers/{slug}/probe", "Check an MCP server as a run reaches it (initialize, then tools/list): state ok, needs_auth, needs_config, unreachable or error, with the reason (admins)", handle(s, ok, s.probeMCPServer(tenantLayer))),
			map[int]string{http.StatusServiceUnavailable: "the MCP bridge is not running"}),
		withErrors(key("mcp", "POST", "/v1/mcp-servers/{slug}/oauth", "Start signing in to a remote MCP server that wants OAuth: discovery (RFC 9728, RFC 8414), "+
			"dynamic client registration (RFC 7591) or the client given, PKCE S256; answers the URL to open in the user's browser, "+
			"which comes back to GET /v1/mcp-oauth/callback (admins)", handle(s, ok, s.startMCPOAuth(tenantLayer))),
			oauthStartErrors),
		key("mcp", "GET", "/v1/projects/{id}/mcp-servers", "A project's own MCP servers (they hide the tenant's of the same slug in its runs)", handle(s, ok, s.listMCPServers(projectLayer))),
		key("mcp", "POST", "/v1/projects/{id}/mcp-servers", "Add an MCP server to a project (owners, admins)", handle(s, created, s.createMCPServer(projectLayer))),
		key("mcp", "GET", "/v1/projects/{id}/mcp-servers/{slug}", "One of a project's MCP servers", handle(s, ok, s.getMCPServer(projectLayer))),
		withErrors(key("mcp", "PUT", "/v1/projects/{id}/mcp-servers/{slug}", "Replace a project's MCP server (owners, admins)", handle(s, ok, s.replaceMCPServer(projectLayer))), managedServer),
		withErrors(key("mcp", "DELETE", "/v1/projects/{id}/mcp-servers/{slug}", "Delete a project's MCP server (owners, admins)", handle(s, gone, s.deleteMCPServer(projectLayer))), managedServer),
		withErrors(key("mcp", "POST", "/v1/projects/{id}/mcp-servers/{slug}/probe", "Check a project's MCP server as its runs reach it (owners, admins)", handle(s, ok, s.probeMCPServer(projectLayer))),
			map[int]string{http.StatusServiceUnavailable: "the MCP bridge is not running"}),
		withErrors(key("mcp", "POST", "/v1/projects/{id}/mcp-servers/{slug}/oauth", "Start signing in to a project's remote MCP server that wants OAuth (owners, admins)",
			handle(s, ok, s.startMCPOAuth(projectLayer))), oauthStartErrors),
		{Method: "GET", Path: "/v1/mcp-oauth/callback", Summary: "Where an MCP server's authorization server sends the user back: " +
			"completes the sign-in the state names (single-use, expiring, bound to its tenant and server), seals the grant on the " +
			"server and answers a page saying so; no API key", Tag: "mcp", Query: callbackParams, ep: s.mcpOAuthCallback(),
			Errors: map[int]string{http.StatusBadRequest: "oauth_state: the state is forged, expired, already used or names no sign-in",
				http.StatusForbidden: "oauth_denied or needs_auth: the authorization server refused (the page quotes it)"}},

		key("accounts", "GET", "/v1/providers", "The tenant's engine providers", handle(s, ok, s.listProviders)),
		key("accounts", "POST", "/v1/providers", "Create a provider (admins)", handle(s, created, s.createProvider)),
		key("accounts", "PUT", "/v1/providers/{id}", "Replace a provider's fields (admins)", handle(s, ok, s.replaceProvider)),
		key("accounts", "DELETE", "/v1/providers/{id}", "Delete a provider and its accounts (admins)", handle(s, gone, s.deleteProvider)),
		key("accounts", "GET", "/v1/providers/{id}/accounts", "A provider's accounts; credentials are never returned", handle(s, ok, s.listAccounts)),
		key("accounts", "POST", "/v1/providers/{id}/accounts", "Add an account; its credential is sealed and write-only (admins)", handle(s, created, s.createAccount)),
		key("accounts", "PUT", "/v1/accounts/{id}", "Rename an account, set or clear its credential (admins)", handle(s, ok, s.replaceAccount)),
		key("accounts", "DELETE", "/v1/accounts/{id}", "Delete an account (admins)", handle(s, gone, s.deleteAccount)),
		key("accounts", "POST", "/v1/accounts/{id}/activate", "Make an account its provider's active one (admins)", handle(s, gone, s.activateAccount)),

		key("artifacts", "GET", "/v1/artifacts/detect", "An engine's skills or subagents: Clopen's and adoptable ones (admins)", handle(s, ok, s.detect), typeParam, engineParam),
		key("artifacts", "POST", "/v1/artifacts/adopt", "Link a detected entry into the tenant's store (admins)", handle(s, created, s.adopt)),
		key("artifacts", "GET", "/v1/artifacts/revision", "The tenant's artifact revision, bumped by every change", handle(s, ok, s.revision)),

		key("live", "GET", wsPath, "WebSocket: live chat events with resume cursors, and the \"/\" picker (protocol: pkg/events/ws.go)", endpoint{
			in: noneType, out: noneType, status: http.StatusSwitchingProtocols,
			serve: func(w http.ResponseWriter, r *http.Request, p identity.Principal) { s.live.ServeWS(w, r, p) },
		}),
	}
	routes = append(routes, s.sessionRoutes()...)
	routes = append(routes, s.fileRoutes(key)...)
	routes = append(routes, s.auditRoutes(key)...)
	routes = append(routes, s.integrationRoutes(key)...)
	return append(routes, s.engineRoutes(key)...)
}

var (
	anyType    = reflect.TypeFor[json.RawMessage]()
	healthType = reflect.TypeFor[map[string]any]()
)

func (s *Server) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.openapi)
}
