package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/mcpoauth"
)

// MCPGrant is the OAuth authorization Clopen holds for a remote MCP server:
// the authorization server's endpoints with the client it is known as
// there, and the token. It is sealed with the server's env and headers and
// never leaves the artifacts service but as the Authorization header of a
// resolved server.
type MCPGrant struct {
	Server mcpoauth.Server `json:"server"`
	Token  mcpoauth.Token  `json:"token"`
	// NeedsAuth says why a person must authorize the server again (its
	// refresh was refused); the token is then empty.
	NeedsAuth string `json:"needsAuth,omitempty"`
}

// GrantRefresher returns g's token fresh enough for a run, with changed
// true when it is a new one (mcpoauth.Client.FreshToken). An error wrapping
// mcpoauth.ErrNeedsAuth means no refresh will ever work.
type GrantRefresher func(ctx context.Context, g MCPGrant) (tok mcpoauth.Token, changed bool, err error)

// ResolveMCPServer returns the server slug names for a run of project: the
// project's own, else the tenant's, with its secrets opened. A disabled
// server is ErrNotFound, like a missing one. A server with an OAuth grant
// gets its token as the Authorization header, refreshed by fresh first
// (nil: as it is);
// a rotated token is sealed before it is returned, under the row's lock,
// so two runs never spend one refresh token. A refresh refused for good
// drops the token and marks the grant: the server comes back with
// NeedsAuth set and no Authorization from the grant.
func (s *Store) ResolveMCPServer(ctx context.Context, tenant, project, slug string, fresh GrantRefresher) (events.ResolvedMCPServer, error) {
	var out events.ResolvedMCPServer
	err := pgx.BeginFunc(ctx, s.DB, func(tx pgx.Tx) error {
		var sealed *string
		row := tx.QueryRow(ctx, `SELECT `+mcpColumns+`, credential FROM artifacts.mcp_servers
			WHERE tenant_id = $1 AND project_id IN ('', $2) AND slug = $3 AND enabled
			ORDER BY project_id DESC LIMIT 1 FOR UPDATE`, tenant, project, slug)
		d, err := scanMCPServer(scanTail{row, &sealed})
		if err != nil {
			return err
		}
		out.MCPServerDef = d
		if sealed == nil {
			return nil
		}
		sec, err := s.openMCPSecrets(*sealed, tenant, d.ID)
		if err != nil {
			return err
		}
		out.Env, out.Headers = sec.Env, sec.Headers
		g := sec.OAuth
		if g == nil {
			return nil
		}
		if g.NeedsAuth == "" && fresh != nil {
			tok, changed, err := fresh(ctx, *g)
			switch {
			case errors.Is(err, mcpoauth.ErrNeedsAuth):
				g.Token, g.NeedsAuth, changed = mcpoauth.Token{}, err.Error(), true
			case err != nil:
				return fmt.Errorf("refresh the token of mcp server %s: %w", slug, err)
			default:
				g.Token = tok
			}
			if changed {
				if err := s.updateMCPSecrets(ctx, tx, sec, tenant, d.ID); err != nil {
					return err
				}
			}
		}
		out.NeedsAuth = g.NeedsAuth
		if g.Token.AccessToken != "" {
			out.Headers = maps.Clone(out.Headers)
			if out.Headers == nil {
				out.Headers = map[string]string{}
			}
			out.Headers["Authorization"] = g.Token.Header()
			out.Expires = g.Token.Expiry
		}
		return nil
	})
	return out, mapErr(err)
}

// SetMCPGrant seals g on the tenant's server with id (whichever scope it
// is in), in place of any grant it had, audited as mcp_server.authorize,
// and returns the server. The id, not the slug, names the server a sign-in
// was started for: one deleted and added again under the same slug does
// not take the grant.
func (s *Store) SetMCPGrant(ctx context.Context, tenant, id string, g MCPGrant) (events.MCPServerDef, error) {
	var project, slug string
	if err := s.DB.QueryRow(ctx, `SELECT project_id, slug FROM artifacts.mcp_servers WHERE tenant_id = $1 AND id::text = $2`,
		tenant, id).Scan(&project, &slug); err != nil {
		return events.MCPServerDef{}, mapErr(err)
	}
	_, err := s.change(ctx, tenant, mcpServerTarget("mcp_server.authorize", tenant, project, slug), func(tx pgx.Tx) error {
		var transport string
		var sealed *string
		err := tx.QueryRow(ctx, `SELECT transport, credential FROM artifacts.mcp_servers
			WHERE tenant_id = $1 AND id::text = $2 FOR UPDATE`, tenant, id).Scan(&transport, &sealed)
		if err != nil {
			return err
		}
		if transport != string(events.MCPHTTP) {
			return fmt.Errorf("%w: mcp server %s is not a remote server", ErrInvalid, slug)
		}
		// An integration's next change would drop the grant: its account
		// holds the server's credential.
		if err := refuseManaged(ctx, tx, tenant, project, slug); err != nil {
			return err
		}
		var sec mcpSecrets
		if sealed != nil {
			if sec, err = s.openMCPSecrets(*sealed, tenant, id); err != nil {
				return err
			}
		}
		sec.OAuth = &g
		return s.updateMCPSecrets(ctx, tx, sec, tenant, id)
	})
	if err != nil {
		return events.MCPServerDef{}, err
	}
	return s.GetMCPServer(ctx, tenant, project, slug)
}

// updateMCPSecrets seals sec on the server row id, which tx holds locked.
func (s *Store) updateMCPSecrets(ctx context.Context, tx pgx.Tx, sec mcpSecrets, tenant, id string) error {
	envelope, fp, err := s.sealMCPSecrets(ctx, tx, sec, tenant, id)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE artifacts.mcp_servers SET credential = $3, key_fingerprint = $4, updated_at = now()
		WHERE tenant_id = $1 AND id::text = $2`, tenant, id, envelope, fp)
	return err
}

// sealMCPSecrets seals sec for the server row id with the key the database
// names, and returns the envelope and that key's fingerprint.
func (s *Store) sealMCPSecrets(ctx context.Context, tx pgx.Tx, sec mcpSecrets, tenant, id string) (string, string, error) {
	key, err := s.SealingKey(ctx, tx)
	if err != nil {
		return "", "", err
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return "", "", err
	}
	envelope, err := key.Seal(string(plain), mcpAD(tenant, id))
	return envelope, key.Fingerprint(), err
}

// openMCPSecrets opens the sealed secrets of the server row id.
func (s *Store) openMCPSecrets(sealed, tenant, id string) (mcpSecrets, error) {
	var sec mcpSecrets
	plain, err := s.Keys.Open(sealed, mcpAD(tenant, id))
	if err != nil {
		return sec, fmt.Errorf("open secrets of mcp server %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(plain), &sec); err != nil {
		return sec, fmt.Errorf("secrets of mcp server %s: %w", id, err)
	}
	return sec, nil
}
