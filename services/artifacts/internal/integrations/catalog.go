// Package integrations is the built-in catalog of integration providers:
// what an account at each may be given and the MCP server it projects.
// Adding a provider is adding an entry to Catalog; the store reads it when
// an account is connected or changed, so a changed entry reaches an
// account's server the next time the account changes.
package integrations

import (
	"slices"

	"clopen.dev/pkg/events"
)

// Custom is the provider whose accounts give their MCP server's URL and
// key header themselves.
const Custom = "custom"

// Catalog is every provider, by id.
var Catalog = []events.IntegrationProvider{
	{
		ID: "github", Name: "GitHub", Capabilities: []string{events.CapabilityAgentTools}, Auth: events.IntegrationAuthAPIKey,
		// GitHub's remote MCP server takes a personal access token as a
		// bearer token.
		Server: events.IntegrationServer{Slug: "github", URL: "https://api.githubcopilot.com/mcp/",
			HeaderName: "Authorization", HeaderPrefix: "Bearer "},
	},
	{
		ID: Custom, Name: "Custom MCP server", Capabilities: []string{events.CapabilityAgentTools}, Auth: events.IntegrationAuthAPIKey,
		// The account names the URL, the slug and the header; the key is
		// the header's whole value.
	},
}

// Lookup returns the provider id names.
func Lookup(id string) (events.IntegrationProvider, bool) {
	i := slices.IndexFunc(Catalog, func(p events.IntegrationProvider) bool { return p.ID == id })
	if i < 0 {
		return events.IntegrationProvider{}, false
	}
	return Catalog[i], true
}
