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
)

// An integration account with agent-tools projects one MCP server row of
// its scope and slug (artifacts.integration_projections). The row is the
// integration's while it is projected: PutMCPServer and DeleteMCPServer
// refuse it (refuseManaged). An adopted row keeps its id, so the sealed
// credential kept for it still opens when it is put back.

// reconcileProjection brings the projection of account in, in tx, to what
// the account now is: none without agent-tools, else the server of its
// slug carrying key in its header.
func (s *Store) reconcileProjection(ctx context.Context, tx pgx.Tx, tenant string, in events.Integration, prov events.IntegrationProvider, key string) error {
	var slug string
	err := tx.QueryRow(ctx, `SELECT slug FROM artifacts.integration_projections WHERE tenant_id = $1 AND account_id = $2 FOR UPDATE`,
		tenant, in.ID).Scan(&slug)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	projected := err == nil
	wants := slices.Contains(in.Capabilities, events.CapabilityAgentTools)
	if projected && (!wants || slug != in.Server.Slug) {
		if err := s.unproject(ctx, tx, tenant, in.ID); err != nil {
			return err
		}
		projected = false
	}
	if !wants {
		return nil
	}
	server := prov.Server
	if server.URL == "" { // a custom provider: the account's
		server.URL, server.HeaderName = in.Server.URL, in.Server.HeaderName
	}
	def := events.MCPServerDef{ProjectID: in.ProjectID, Slug: in.Server.Slug, Name: prov.Name + ": " + in.Label, Transport: events.MCPHTTP,
		URL: server.URL}
	if len(def.Name) > 200 { // a long label; cut on a character boundary
		def.Name = strings.ToValidUTF8(def.Name[:200], "")
	}
	headers := map[string]string{server.HeaderName: server.HeaderPrefix + key}
	var id, managedBy string
	err = tx.QueryRow(ctx, `SELECT m.id::text, coalesce(p.account_id::text, '') FROM artifacts.mcp_servers m
		LEFT JOIN artifacts.integration_projections p ON p.tenant_id = m.tenant_id AND p.server_id = m.id
		WHERE m.tenant_id = $1 AND m.project_id = $2 AND m.slug = $3 FOR UPDATE OF m`, tenant, in.ProjectID, in.Server.Slug).Scan(&id, &managedBy)
	switch {
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return err
	case managedBy != "" && managedBy != in.ID:
		return fmt.Errorf("%w: integration.server.slug %q: the MCP server of that slug is managed by integration %s", ErrConflict,
			in.Server.Slug, managedBy)
	case projected: // the row is ours: only its fields change
	case id != "": // adopt the row there, keeping what it was
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts.integration_projections (tenant_id, account_id, project_id, slug, server_id,
				adopted, restore, credential, key_fingerprint)
			SELECT $1, $2, project_id, slug, id, true, to_jsonb(m) - 'credential' - 'key_fingerprint', credential, key_fingerprint
			FROM artifacts.mcp_servers m WHERE tenant_id = $1 AND id = $3`, tenant, in.ID, id); err != nil {
			return err
		}
	default:
		id = uuid.NewString()
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts.integration_projections (tenant_id, account_id, project_id, slug, server_id, adopted)
			VALUES ($1, $2, $3, $4, $5, false)`, tenant, in.ID, in.ProjectID, in.Server.Slug, id); err != nil {
			return err
		}
	}
	return s.writeProjected(ctx, tx, tenant, id, def, headers)
}

// writeProjected writes the projected fields of server id, creating the
// row or updating the one there; an adopted row keeps its exposure and
// whether it is enabled.
func (s *Store) writeProjected(ctx context.Context, tx pgx.Tx, tenant, id string, d events.MCPServerDef, headers map[string]string) error {
	if err := ValidateMCPServer(d, nil, headers); err != nil {
		return err
	}
	key, err := s.SealingKey(ctx, tx)
	if err != nil {
		return err
	}
	plain, _ := json.Marshal(mcpSecrets{Headers: headers})
	envelope, err := key.Seal(string(plain), mcpAD(tenant, id))
	if err != nil {
		return err
	}
	headerNames, _ := json.Marshal(sortedKeys(headers))
	_, err = tx.Exec(ctx, `INSERT INTO artifacts.mcp_servers (tenant_id, project_id, slug, id, name, transport, url, header_names,
			credential, key_fingerprint)
		VALUES ($1, $2, $3, $4, $5, 'http', $6, $7, $8, $9)
		ON CONFLICT (tenant_id, project_id, slug) DO UPDATE SET name = excluded.name, transport = 'http', url = excluded.url,
			command = '', args = '[]', env_names = '[]', header_names = excluded.header_names, credential = excluded.credential,
			key_fingerprint = excluded.key_fingerprint, updated_at = now()`,
		tenant, d.ProjectID, d.Slug, id, d.Name, d.URL, headerNames, envelope, key.Fingerprint())
	return err
}

// unproject lets account's server go, if it projects one: a row it
// created is deleted; an adopted row is put back as it was, every column
// from the copy kept at adoption (the current row fills a column added
// since), its sealed credential included.
func (s *Store) unproject(ctx context.Context, tx pgx.Tx, tenant, account string) error {
	var serverID string
	var adopted bool
	err := tx.QueryRow(ctx, `SELECT server_id::text, adopted FROM artifacts.integration_projections
		WHERE tenant_id = $1 AND account_id = $2 FOR UPDATE`, tenant, account).Scan(&serverID, &adopted)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	current := []byte("{}")
	err = tx.QueryRow(ctx, `DELETE FROM artifacts.mcp_servers m WHERE tenant_id = $1 AND id = $2 RETURNING to_jsonb(m)`,
		tenant, serverID).Scan(&current)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if adopted {
		if _, err := tx.Exec(ctx, `INSERT INTO artifacts.mcp_servers
			SELECT r.* FROM artifacts.integration_projections p, jsonb_populate_record(NULL::artifacts.mcp_servers,
				$3::jsonb || p.restore || jsonb_build_object('tenant_id', p.tenant_id, 'id', p.server_id,
					'credential', p.credential, 'key_fingerprint', p.key_fingerprint)) r
			WHERE p.tenant_id = $1 AND p.account_id = $2`, tenant, account, current); err != nil {
			return fmt.Errorf("restore the MCP server integration %s adopted: %w", account, err)
		}
	}
	_, err = tx.Exec(ctx, `DELETE FROM artifacts.integration_projections WHERE tenant_id = $1 AND account_id = $2`, tenant, account)
	return err
}

// refuseManaged is ErrConflict, naming the integration, when an
// integration projects the MCP server of scope and slug.
func refuseManaged(ctx context.Context, tx pgx.Tx, tenant, project, slug string) error {
	var account string
	err := tx.QueryRow(ctx, `SELECT account_id::text FROM artifacts.integration_projections
		WHERE tenant_id = $1 AND project_id = $2 AND slug = $3`, tenant, project, slug).Scan(&account)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%w: MCP server %q is managed by integration %s (managedBy integration:%s): change or disconnect the integration",
		ErrConflict, slug, account, account)
}
