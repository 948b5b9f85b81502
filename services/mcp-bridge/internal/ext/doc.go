// Package ext proxies a run's external MCP servers: /mcp/ext/<slug>.
//
// A request reaches the Handler only after the bridge's token check put
// the run it is bound to into its context (binding.With). The Handler
// refuses a request that carries no run (401), a slug outside the run's
// profile (403), a server the run's tenant and project do not have (404)
// and a server whose exposure leaves out the run's engine (403); then it
// serves MCP Streamable HTTP to the agent and relays tools/list and
// tools/call to the server:
//   - a remote server over Streamable HTTP (the SDK's client transport),
//     with its sealed headers, through a dialer that refuses addresses that
//     are not public unless the operator allows the host;
//   - a stdio server started by Options.Launch, which must confine it the
//     way the agents are confined (the bridge's is internal/confine);
//     without a launcher stdio servers are refused, never started on the
//     host as they are. One process per tenant and server serves every
//     run of the tenant: started by the first call, stopped once unused
//     for Options.IdleTimeout and by Close, and, when it dies, started
//     again by the next call after failing the call in flight with its
//     exit status and the end of its stderr.
//
// tools/list is passed through as the server wrote it, but for three
// repairs engines need: dangling or remote "$ref"s are removed (or pointed
// at the "$defs"/"definitions" twin that exists), "outputSchema" is
// dropped, and an input schema that is not an object becomes one. The
// tools the server's exposure hides from the run's engine are left out
// and refused when called. A tool's output over Options.MaxOutput bytes
// (DefaultMaxOutput, 100,000) is cut to it with a note saying so.
//
// Each run and slug gets its own MCP session table and, for a remote
// server, its own upstream connection: a session id of one run presented
// by another is unknown.
//
// The bridge mounts it with one line, behind its token middleware:
//
//	mux.Handle(ext.Pattern, requireRun(ext.New(ext.Bus{NC: nc}, ext.Options{Logger: log})))
//
// and calls Handler.Close when it stops.
package ext
