package artifacts

import (
	"context"
	"errors"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Integration accounts: admins connect, change and disconnect them; any
// user reads the tenant's and those bound to a project the user may use
// (another project's are not found). Their credentials are write-only.

// IntegrationProviders returns the built-in catalog.
func (a *Artifacts) IntegrationProviders(ctx context.Context, p identity.Principal) ([]events.IntegrationProvider, error) {
	var out []events.IntegrationProvider
	err := a.call(ctx, events.OpIntegrationProviders, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// Integrations lists the accounts p may see.
func (a *Artifacts) Integrations(ctx context.Context, p identity.Principal) ([]events.Integration, error) {
	var all []events.Integration
	if err := a.call(ctx, events.OpIntegrationsList, events.ListRequest{Caller: p.Caller()}, &all); err != nil {
		return nil, err
	}
	out := []events.Integration{}
	for _, in := range all {
		if err := a.canRead(ctx, p, Layer{ProjectID: in.ProjectID}); err == nil {
			out = append(out, in)
		} else if !errors.Is(err, apierr.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// Integration returns one account p may see.
func (a *Artifacts) Integration(ctx context.Context, p identity.Principal, id string) (events.Integration, error) {
	var in events.Integration
	if err := a.call(ctx, events.OpIntegrationsGet, events.RefByID{Caller: p.Caller(), ID: id}, &in); err != nil {
		return in, named(err, "integration", id)
	}
	if err := a.canRead(ctx, p, Layer{ProjectID: in.ProjectID}); err != nil {
		return events.Integration{}, named(err, "integration", id)
	}
	return in, nil
}

// ConnectIntegration connects an account (admins), projecting its MCP
// server when it has agent-tools.
func (a *Artifacts) ConnectIntegration(ctx context.Context, p identity.Principal, in api.IntegrationInput) (events.Integration, error) {
	var out events.Integration
	if err := admin(p, "connect integrations"); err != nil {
		return out, err
	}
	if err := a.canRead(ctx, p, Layer{ProjectID: in.ProjectID}); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpIntegrationsPut, events.IntegrationPut{Caller: p.Caller(), Integration: events.Integration{
		ProjectID: in.ProjectID, Provider: in.Provider, Label: in.Label, Capabilities: in.Capabilities, Server: in.Server,
	}, Credential: &in.Credential}, &out)
	return out, err
}

// UpdateIntegration changes an account (admins): its label, capabilities,
// server or credential, each kept when left out.
func (a *Artifacts) UpdateIntegration(ctx context.Context, p identity.Principal, id string, patch api.IntegrationPatch) (events.Integration, error) {
	if err := admin(p, "change integrations"); err != nil {
		return events.Integration{}, err
	}
	in, err := a.Integration(ctx, p, id)
	if err != nil {
		return in, err
	}
	if patch.Label != nil {
		in.Label = *patch.Label
	}
	if patch.Capabilities != nil {
		in.Capabilities = *patch.Capabilities
	}
	if patch.Server != nil {
		in.Server = *patch.Server
	}
	var out events.Integration
	err = a.call(ctx, events.OpIntegrationsPut, events.IntegrationPut{Caller: p.Caller(), Integration: in, Credential: patch.Credential}, &out)
	return out, named(err, "integration", id)
}

// DisconnectIntegration removes an account (admins) and lets its MCP
// server go: deleted, or put back as it was before the account adopted it.
func (a *Artifacts) DisconnectIntegration(ctx context.Context, p identity.Principal, id string) error {
	if err := admin(p, "disconnect integrations"); err != nil {
		return err
	}
	if _, err := a.Integration(ctx, p, id); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpIntegrationsDelete, events.RefByID{Caller: p.Caller(), ID: id}, nil), "integration", id)
}

// CheckIntegration probes the MCP server an account projects as a run
// reaches it (admins: the probe sends the server its key) and records what
// it found as the account's status: ok, needs_auth, needs_config, or
// error (the server unreachable or failing), with the reason.
func (a *Artifacts) CheckIntegration(ctx context.Context, p identity.Principal, id string) (events.Integration, error) {
	if err := admin(p, "check integrations"); err != nil {
		return events.Integration{}, err
	}
	in, err := a.Integration(ctx, p, id)
	if err != nil {
		return in, err
	}
	if in.Projection == nil {
		return in, apierr.New(apierr.ErrConflict, "integration %q projects no MCP server to check: give it %s", id, events.CapabilityAgentTools)
	}
	st, err := a.ProbeMCPServer(ctx, p, Layer{ProjectID: in.Projection.ProjectID}, in.Projection.Slug)
	if err != nil {
		return in, err
	}
	status := st.State
	if status != events.IntegrationOK && status != events.IntegrationNeedsAuth && status != events.IntegrationNeedsConfig {
		status = events.IntegrationError // unreachable, or failing
	}
	err = a.call(ctx, events.OpIntegrationsStatus, events.IntegrationStatusSet{Caller: p.Caller(), ID: id, Status: status,
		Reason: st.Reason}, nil)
	if err != nil {
		return in, named(err, "integration", id)
	}
	return a.Integration(ctx, p, id)
}
