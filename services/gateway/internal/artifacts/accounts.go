package artifacts

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Providers lists the tenant's engine providers.
func (a *Artifacts) Providers(ctx context.Context, p identity.Principal) ([]events.Provider, error) {
	var out []events.Provider
	err := a.call(ctx, events.OpProvidersList, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// provider returns one provider of the tenant; the service has no get.
func (a *Artifacts) provider(ctx context.Context, p identity.Principal, id string) (events.Provider, error) {
	list, err := a.Providers(ctx, p)
	if err != nil {
		return events.Provider{}, err
	}
	for _, pr := range list {
		if pr.ID == id {
			return pr, nil
		}
	}
	return events.Provider{}, apierr.New(apierr.ErrNotFound, "provider %q not found", id)
}

// CreateProvider creates a provider, enabled unless in says otherwise
// (admins).
func (a *Artifacts) CreateProvider(ctx context.Context, p identity.Principal, in api.ProviderInput) (events.Provider, error) {
	if err := admin(p, "create providers"); err != nil {
		return events.Provider{}, err
	}
	out, err := a.putProvider(ctx, p, events.Provider{Engine: in.Engine, Slug: in.Slug, Name: in.Name, APIURL: in.APIURL, Options: in.Options})
	if err != nil || in.Enabled == nil || *in.Enabled {
		return out, err
	}
	// The service enables every new provider; a disabled one takes a second write.
	out.Enabled = false
	return a.putProvider(ctx, p, out)
}

// ReplaceProvider replaces a provider's fields (admins); Enabled nil keeps
// its state.
func (a *Artifacts) ReplaceProvider(ctx context.Context, p identity.Principal, id string, in api.ProviderInput) (events.Provider, error) {
	if err := admin(p, "change providers"); err != nil {
		return events.Provider{}, err
	}
	cur, err := a.provider(ctx, p, id)
	if err != nil {
		return events.Provider{}, err
	}
	next := events.Provider{ID: id, Engine: in.Engine, Slug: in.Slug, Name: in.Name, APIURL: in.APIURL, Options: in.Options, Enabled: cur.Enabled}
	if in.Enabled != nil {
		next.Enabled = *in.Enabled
	}
	return a.putProvider(ctx, p, next)
}

func (a *Artifacts) putProvider(ctx context.Context, p identity.Principal, pr events.Provider) (events.Provider, error) {
	var out events.Provider
	err := a.call(ctx, events.OpProvidersPut, events.ProviderPut{Caller: p.Caller(), Provider: pr}, &out)
	return out, named(err, "provider", pr.ID)
}

// DeleteProvider deletes a provider and its accounts (admins).
func (a *Artifacts) DeleteProvider(ctx context.Context, p identity.Principal, id string) error {
	if err := admin(p, "delete providers"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpProvidersDelete, events.RefByID{Caller: p.Caller(), ID: id}, nil), "provider", id)
}

// Accounts lists a provider's accounts; none carries its credential.
func (a *Artifacts) Accounts(ctx context.Context, p identity.Principal, provider string) ([]events.Account, error) {
	var out []events.Account
	err := a.call(ctx, events.OpAccountsList, events.ProviderAccounts{Caller: p.Caller(), ProviderID: provider}, &out)
	return out, named(err, "provider", provider)
}

// CreateAccount adds an account to a provider (admins). The first account
// of a provider becomes its active one.
func (a *Artifacts) CreateAccount(ctx context.Context, p identity.Principal, provider string, in api.AccountInput) (events.Account, error) {
	if err := admin(p, "create accounts"); err != nil {
		return events.Account{}, err
	}
	var out events.Account
	err := a.call(ctx, events.OpAccountsPut, events.AccountPut{Caller: p.Caller(),
		Account: events.Account{ProviderID: provider, Name: in.Name}, Credential: in.Credential}, &out)
	return out, named(err, "provider", provider)
}

// ReplaceAccount renames an account and sets or clears its credential
// (admins).
func (a *Artifacts) ReplaceAccount(ctx context.Context, p identity.Principal, id string, in api.AccountInput) (events.Account, error) {
	if err := admin(p, "change accounts"); err != nil {
		return events.Account{}, err
	}
	var out events.Account
	err := a.call(ctx, events.OpAccountsPut, events.AccountPut{Caller: p.Caller(),
		Account: events.Account{ID: id, Name: in.Name}, Credential: in.Credential}, &out)
	return out, named(err, "account", id)
}

// DeleteAccount deletes an account; if it was active, its provider's oldest
// remaining account becomes active (admins).
func (a *Artifacts) DeleteAccount(ctx context.Context, p identity.Principal, id string) error {
	if err := admin(p, "delete accounts"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpAccountsDelete, events.RefByID{Caller: p.Caller(), ID: id}, nil), "account", id)
}

// ActivateAccount makes an account its provider's active one (admins).
func (a *Artifacts) ActivateAccount(ctx context.Context, p identity.Principal, id string) error {
	if err := admin(p, "activate accounts"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpAccountsActivate, events.RefByID{Caller: p.Caller(), ID: id}, nil), "account", id)
}
