package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/integrations"
	"clopen.dev/services/artifacts/internal/skills"
)

// integrationQuery reads accounts with their projections, in
// scanIntegration's order; callers add the WHERE clause on a.
const integrationQuery = `SELECT a.id::text, a.project_id, a.provider, a.label, a.capabilities, a.server_slug, a.server_url,
	a.header_name, a.credential IS NOT NULL, a.status, a.status_reason, a.created_at, a.updated_at, p.server_id::text, p.project_id, p.slug, p.adopted
	FROM artifacts.integration_accounts a
	LEFT JOIN artifacts.integration_projections p ON p.tenant_id = a.tenant_id AND p.account_id = a.id`

func scanIntegration(row pgx.Row) (events.Integration, error) {
	var in events.Integration
	var caps []byte
	var serverID, projProject, projSlug *string
	var adopted *bool
	if err := row.Scan(&in.ID, &in.ProjectID, &in.Provider, &in.Label, &caps, &in.Server.Slug, &in.Server.URL, &in.Server.HeaderName,
		&in.HasCredential, &in.Status, &in.StatusReason, &in.CreatedAt, &in.UpdatedAt, &serverID, &projProject, &projSlug, &adopted); err != nil {
		return events.Integration{}, mapErr(err)
	}
	if err := json.Unmarshal(caps, &in.Capabilities); err != nil {
		return events.Integration{}, fmt.Errorf("integration %s: %w", in.ID, err)
	}
	if serverID != nil {
		in.Projection = &events.IntegrationProjection{ServerID: *serverID, ProjectID: *projProject, Slug: *projSlug, Adopted: *adopted}
	}
	if p, ok := integrations.Lookup(in.Provider); ok && p.Server.URL != "" {
		in.Server = events.IntegrationServer{Slug: in.Server.Slug, URL: p.Server.URL, HeaderName: p.Server.HeaderName,
			HeaderPrefix: p.Server.HeaderPrefix}
	}
	return in, nil
}

// ListIntegrations returns every integration account of the tenant, of
// every scope, by label.
func (s *Store) ListIntegrations(ctx context.Context, tenant string) ([]events.Integration, error) {
	rows, err := s.DB.Query(ctx, integrationQuery+` WHERE a.tenant_id = $1 ORDER BY a.label, a.id`, tenant)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Integration, error) { return scanIntegration(r) })
}

// GetIntegration returns one integration account, without its credential.
func (s *Store) GetIntegration(ctx context.Context, tenant, id string) (events.Integration, error) {
	return getIntegration(ctx, s.DB, tenant, id)
}

func getIntegration(ctx context.Context, q querier, tenant, id string) (events.Integration, error) {
	if _, err := uuid.Parse(id); err != nil {
		return events.Integration{}, ErrNotFound
	}
	return scanIntegration(q.QueryRow(ctx, integrationQuery+` WHERE a.tenant_id = $1 AND a.id = $2`, tenant, id))
}

// checkIntegration validates an account against its provider and fills
// the server slug it projects when the caller gave none; it names the
// first field at fault.
func checkIntegration(in *events.Integration, credential *string, creating bool) (events.IntegrationProvider, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	prov, ok := integrations.Lookup(in.Provider)
	if !ok {
		return prov, bad("integration.provider %q: not in the catalog (GET /v1/integrations/providers)", in.Provider)
	}
	custom := prov.ID == integrations.Custom
	if in.Server.Slug == "" {
		in.Server.Slug = prov.Server.Slug
	}
	switch {
	case len(in.ProjectID) > 128:
		return prov, bad("integration.projectId: at most 128 characters")
	case strings.TrimSpace(in.Label) == "":
		return prov, bad("integration.label is required")
	case len(in.Label) > 200:
		return prov, bad("integration.label: at most 200 characters")
	case in.Server.Slug == "":
		return prov, bad("integration.server.slug is required for a %s integration", prov.ID)
	case !skills.ValidSlug(in.Server.Slug) || in.Server.Slug == events.MCPInternalServer:
		return prov, bad("integration.server.slug %q: lowercase letters, digits and single hyphens, at most 64, not %q",
			in.Server.Slug, events.MCPInternalServer)
	case !custom && in.Server != (events.IntegrationServer{Slug: in.Server.Slug}) &&
		in.Server != (events.IntegrationServer{Slug: in.Server.Slug, URL: prov.Server.URL, HeaderName: prov.Server.HeaderName,
			HeaderPrefix: prov.Server.HeaderPrefix}):
		return prov, bad("integration.server: only the slug is the account's to give; %s's URL and header are the catalog's", prov.ID)
	case custom && in.Server.URL == "":
		return prov, bad("integration.server.url is required for a custom integration")
	case custom && len(in.Server.URL) > 2048:
		return prov, bad("integration.server.url: at most 2048 bytes")
	case custom && in.Server.HeaderName == "":
		return prov, bad("integration.server.headerName is required for a custom integration")
	case custom && in.Server.HeaderPrefix != "":
		return prov, bad("integration.server.headerPrefix: a custom integration's key is the header's whole value")
	case creating && credential == nil:
		return prov, bad("credential is required (%s)", prov.Auth)
	case credential != nil && strings.TrimSpace(*credential) == "":
		return prov, bad("credential: empty")
	case credential != nil && (strings.ContainsAny(*credential, "\r\n\x00") || len(*credential) > 8192):
		return prov, bad("credential: no line break or NUL byte, at most 8192 bytes")
	}
	for i, c := range in.Capabilities {
		if !slices.Contains(prov.Capabilities, c) {
			return prov, bad("integration.capabilities[%d] %q: %s offers %s", i, c, prov.ID, strings.Join(prov.Capabilities, ", "))
		}
	}
	in.Capabilities = slices.Compact(slices.Sorted(slices.Values(in.Capabilities)))
	if custom {
		// The projected server's header must be one the bridge may send.
		if err := ValidateMCPServer(events.MCPServerDef{Slug: in.Server.Slug, Transport: events.MCPHTTP, URL: in.Server.URL},
			nil, map[string]string{in.Server.HeaderName: "x"}); err != nil {
			return prov, bad("integration.server.headerName %q: not a header the bridge may send", in.Server.HeaderName)
		}
	}
	return prov, nil
}

// PutIntegration connects an account (in.ID "") or changes one; a change
// keeps the account's scope and provider. credential, when not nil,
// replaces the sealed one. In the same transaction it projects the
// account's MCP server when it has agent-tools (creating the row of its
// scope and slug, or adopting the one there), updates it, or lets it go
// (reconcileProjection). It returns the account as stored.
func (s *Store) PutIntegration(ctx context.Context, tenant string, in events.Integration, credential *string) (events.Integration, int64, error) {
	creating := in.ID == ""
	if creating {
		in.ID = uuid.NewString()
	} else if _, err := uuid.Parse(in.ID); err != nil {
		return in, 0, ErrNotFound
	}
	action := "integration.update"
	if creating {
		action = "integration.connect"
	}
	rev, err := s.change(ctx, tenant, integrationTarget(action, tenant, in.ID), func(tx pgx.Tx) error {
		var key string // the credential in clear, for the projected header
		if !creating {
			var old *string
			err := tx.QueryRow(ctx, `SELECT project_id, provider, credential FROM artifacts.integration_accounts
				WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenant, in.ID).Scan(&in.ProjectID, &in.Provider, &old)
			if err != nil {
				return mapErr(err)
			}
			if credential == nil && old != nil {
				if key, err = s.Keys.Open(*old, integrationAD(tenant, in.ID)); err != nil {
					return fmt.Errorf("open the credential of integration %s: %w", in.ID, err)
				}
			}
		}
		prov, err := checkIntegration(&in, credential, creating)
		if err != nil {
			return err
		}
		if credential != nil {
			key = *credential
		}
		var taken string
		err = tx.QueryRow(ctx, `SELECT id::text FROM artifacts.integration_accounts WHERE tenant_id = $1 AND project_id = $2
			AND provider = $3 AND label = $4 AND id <> $5`, tenant, in.ProjectID, in.Provider, in.Label, in.ID).Scan(&taken)
		if err == nil {
			return fmt.Errorf("%w: integration.label %q: integration %s already has it for %s in this scope", ErrConflict, in.Label, taken, in.Provider)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		sealingKey, err := s.SealingKey(ctx, tx)
		if err != nil {
			return err
		}
		envelope, err := sealingKey.Seal(key, integrationAD(tenant, in.ID))
		if err != nil {
			return err
		}
		caps, _ := json.Marshal(orSlice(in.Capabilities))
		url, header := in.Server.URL, in.Server.HeaderName
		if prov.Server.URL != "" { // the catalog's, read when projecting
			url, header = "", ""
		}
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts.integration_accounts (tenant_id, project_id, id, provider, label, capabilities,
				server_slug, server_url, header_name, credential, key_fingerprint)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (tenant_id, id) DO UPDATE SET label = excluded.label, capabilities = excluded.capabilities,
				server_slug = excluded.server_slug, server_url = excluded.server_url, header_name = excluded.header_name,
				credential = excluded.credential, key_fingerprint = excluded.key_fingerprint, status = 'unknown', status_reason = '',
				updated_at = now()`,
			tenant, in.ProjectID, in.ID, in.Provider, in.Label, caps, in.Server.Slug, url, header, envelope,
			sealingKey.Fingerprint()); err != nil {
			return err
		}
		return s.reconcileProjection(ctx, tx, tenant, in, prov, key)
	})
	if err != nil {
		return in, 0, err
	}
	got, err := s.GetIntegration(ctx, tenant, in.ID)
	return got, rev, err
}

// DeleteIntegration disconnects an account: the MCP server it projects is
// deleted, or put back as it was when the account adopted it, in the same
// transaction.
func (s *Store) DeleteIntegration(ctx context.Context, tenant, id string) (int64, error) {
	if _, err := uuid.Parse(id); err != nil {
		return 0, ErrNotFound
	}
	return s.change(ctx, tenant, integrationTarget("integration.disconnect", tenant, id), func(tx pgx.Tx) error {
		if err := s.unproject(ctx, tx, tenant, id); err != nil {
			return err
		}
		return affected(tx.Exec(ctx, `DELETE FROM artifacts.integration_accounts WHERE tenant_id = $1 AND id = $2`, tenant, id))
	})
}

// SetIntegrationStatus records what a check of an account found. A status
// is an observation, not a change of the tenant's artifacts: it bumps no
// revision and writes no audit entry.
func (s *Store) SetIntegrationStatus(ctx context.Context, tenant, id, status, reason string) error {
	if !slices.Contains([]string{events.IntegrationUnknown, events.IntegrationOK, events.IntegrationNeedsAuth,
		events.IntegrationNeedsConfig, events.IntegrationError}, status) {
		return fmt.Errorf("%w: status %q", ErrInvalid, status)
	}
	if _, err := uuid.Parse(id); err != nil {
		return ErrNotFound
	}
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	return affected(s.DB.Exec(ctx, `UPDATE artifacts.integration_accounts SET status = $3, status_reason = $4
		WHERE tenant_id = $1 AND id = $2`, tenant, id, status, strings.ToValidUTF8(reason, "")))
}

// integrationAD binds an account's sealed credential to its tenant and id.
func integrationAD(tenant, id string) string { return "integration:" + tenant + ":" + id }

func integrationTarget(action, tenant, id string) target {
	return target{action: action, kind: "integration", id: id, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		in, err := getIntegration(ctx, tx, tenant, id)
		return absent(in, in.Label, err)
	}}
}
