package artifacts

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/integrations"
)

func (a *api) integrationProviders(context.Context, string, events.ListRequest) ([]events.IntegrationProvider, error) {
	return integrations.Catalog, nil
}

func (a *api) listIntegrations(ctx context.Context, t string, _ events.ListRequest) ([]events.Integration, error) {
	return a.st.ListIntegrations(ctx, t)
}

func (a *api) getIntegration(ctx context.Context, t string, r events.RefByID) (events.Integration, error) {
	return a.st.GetIntegration(ctx, t, r.ID)
}

// putIntegration checks a custom server's URL as an MCP server's is
// checked before the store validates the account and projects its server.
func (a *api) putIntegration(ctx context.Context, t string, r events.IntegrationPut) (events.Integration, error) {
	if err := a.egress.CheckField(ctx, "integration.server.url", r.Integration.Server.URL); err != nil {
		return events.Integration{}, svc.Invalid("%v", err)
	}
	in, _, err := a.st.PutIntegration(ctx, t, r.Integration, r.Credential)
	return in, err
}

func (a *api) deleteIntegration(ctx context.Context, t string, r events.RefByID) (Empty, error) {
	rev, err := a.st.DeleteIntegration(ctx, t, r.ID)
	return Empty{rev}, err
}

func (a *api) setIntegrationStatus(ctx context.Context, t string, r events.IntegrationStatusSet) (Empty, error) {
	return Empty{}, a.st.SetIntegrationStatus(ctx, t, r.ID, r.Status, r.Reason)
}
