package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/skills"
)

// mcpColumns are an MCP server's columns in scanMCPServer's order, the
// last naming the integration that projects it ("" for none); the table
// is read as artifacts.mcp_servers, unaliased.
const mcpColumns = `id::text, project_id, slug, name, transport, url, command, args, env_names, header_names, exposure,
	NOT enabled, created_at, updated_at, coalesce((SELECT 'integration:' || ip.account_id::text FROM artifacts.integration_projections ip
		WHERE ip.tenant_id = mcp_servers.tenant_id AND ip.server_id = mcp_servers.id), '')`

func scanMCPServer(row pgx.Row) (events.MCPServerDef, error) {
	var d events.MCPServerDef
	var transport string
	var args, env, headers, exposure []byte
	if err := row.Scan(&d.ID, &d.ProjectID, &d.Slug, &d.Name, &transport, &d.URL, &d.Command, &args, &env, &headers,
		&exposure, &d.Disabled, &d.CreatedAt, &d.UpdatedAt, &d.ManagedBy); err != nil {
		return events.MCPServerDef{}, mapErr(err)
	}
	d.Transport = events.MCPTransport(transport)
	for _, c := range []struct {
		raw []byte
		to  any
	}{{args, &d.Args}, {env, &d.EnvNames}, {headers, &d.HeaderNames}, {exposure, &d.Exposure}} {
		if err := json.Unmarshal(c.raw, c.to); err != nil {
			return events.MCPServerDef{}, fmt.Errorf("mcp server %s: %w", d.Slug, err)
		}
	}
	return d, nil
}

// ListMCPServers returns the servers of one scope: the tenant's (project
// "") or the project's own, by slug.
func (s *Store) ListMCPServers(ctx context.Context, tenant, project string) ([]events.MCPServerDef, error) {
	if len(project) > 128 {
		return nil, fmt.Errorf("%w: projectId: at most 128 characters", ErrInvalid)
	}
	rows, err := s.DB.Query(ctx, `SELECT `+mcpColumns+` FROM artifacts.mcp_servers
		WHERE tenant_id = $1 AND project_id = $2 ORDER BY slug`, tenant, project)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := []events.MCPServerDef{}
	for rows.Next() {
		d, err := scanMCPServer(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// RunMCPServers returns the servers a run of project may be given, by
// slug: the enabled servers of the project and of the tenant, the
// project's hiding the tenant's of the same slug (the one ResolveMCPServer
// picks), without their secrets.
func (s *Store) RunMCPServers(ctx context.Context, tenant, project string) ([]events.MCPServerDef, error) {
	rows, err := s.DB.Query(ctx, `SELECT DISTINCT ON (slug) `+mcpColumns+` FROM artifacts.mcp_servers
		WHERE tenant_id = $1 AND project_id IN ('', $2) AND enabled ORDER BY slug, project_id DESC`, tenant, project)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.MCPServerDef, error) { return scanMCPServer(r) })
}

// GetMCPServer returns one server of a scope, without its secrets.
func (s *Store) GetMCPServer(ctx context.Context, tenant, project, slug string) (events.MCPServerDef, error) {
	return scanMCPServer(s.DB.QueryRow(ctx, `SELECT `+mcpColumns+` FROM artifacts.mcp_servers
		WHERE tenant_id = $1 AND project_id = $2 AND slug = $3`, tenant, project, slug))
}

// mcpSecrets is what a server's sealed credential holds.
type mcpSecrets struct {
	Env     map[string]string `json:"env,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	OAuth   *MCPGrant         `json:"oauth,omitempty"`
}

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$")
)

// reservedHeaders are set by the bridge itself and may not be configured.
var reservedHeaders = []string{"content-length", "content-type", "host", "mcp-session-id", "mcp-protocol-version",
	"connection", "transfer-encoding", "accept"}

// ValidateMCPServer checks a server definition and its secrets, and names
// the first field at fault. Env belongs to stdio servers, headers to http
// ones; ValidateMCPServer does not check the URL's host (the caller's
// egress policy does).
func ValidateMCPServer(d events.MCPServerDef, env, headers map[string]string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
	}
	switch {
	case len(d.ProjectID) > 128:
		return bad("server.projectId: at most 128 characters")
	case d.Slug == "":
		return bad("server.slug is required")
	case !skills.ValidSlug(d.Slug):
		return bad("server.slug %q: lowercase letters, digits and single hyphens, at most 64", d.Slug)
	case d.Slug == events.MCPInternalServer:
		return bad("server.slug %q is Clopen's own tools' name", d.Slug)
	case len(d.Name) > 200:
		return bad("server.name: at most 200 characters")
	case d.Transport == "":
		return bad("server.transport is required (stdio or http)")
	case !d.Transport.Valid():
		return bad("server.transport %q: want stdio or http", d.Transport)
	case d.Transport == events.MCPHTTP && d.URL == "":
		return bad("server.url is required for an http server")
	case d.Transport == events.MCPHTTP && (d.Command != "" || len(d.Args) > 0):
		return bad("server.command and server.args are for stdio servers")
	case d.Transport == events.MCPHTTP && len(env) > 0:
		return bad("env is for stdio servers; an http server takes headers")
	case d.Transport == events.MCPStdio && strings.TrimSpace(d.Command) == "":
		return bad("server.command is required for a stdio server")
	case d.Transport == events.MCPStdio && d.URL != "":
		return bad("server.url is for http servers")
	case d.Transport == events.MCPStdio && len(headers) > 0:
		return bad("headers are for http servers; a stdio server takes env")
	case len(d.Args) > 64:
		return bad("server.args: at most 64")
	}
	for _, a := range append([]string{d.Command}, d.Args...) {
		if strings.ContainsRune(a, 0) || len(a) > 4096 {
			return bad("server.command and server.args: no NUL byte, at most 4096 bytes each")
		}
	}
	for name, v := range env {
		if !envNameRE.MatchString(name) || len(name) > 128 {
			return bad("env %q: a name of letters, digits and underscores, not starting with a digit", name)
		}
		if strings.ContainsRune(v, 0) || len(v) > 16384 {
			return bad("env %s: no NUL byte, at most 16384 bytes", name)
		}
	}
	for name, v := range headers {
		if !headerNameRE.MatchString(name) || len(name) > 128 {
			return bad("headers %q: not an HTTP header name", name)
		}
		if slices.Contains(reservedHeaders, strings.ToLower(name)) {
			return bad("headers %s: set by the bridge, not configurable", name)
		}
		if strings.ContainsAny(v, "\r\n\x00") || len(v) > 16384 {
			return bad("headers %s: no line break or NUL byte, at most 16384 bytes", name)
		}
	}
	for i, e := range d.Exposure.Engines {
		if !e.Valid() {
			return bad("server.exposure.engines[%d] %q: not an engine", i, e)
		}
	}
	for key := range d.Exposure.DisabledTools {
		if key != "*" && !events.EngineType(key).Valid() {
			return bad("server.exposure.disabledTools %q: an engine or \"*\"", key)
		}
	}
	return nil
}

// PutMCPServer creates or replaces the server of d's scope and slug (not
// one an integration projects: ErrConflict naming it). env
// and headers, when not nil, are sealed in place of the stored ones; nil
// keeps them (and a change of transport then keeps none that no longer
// fit, which is refused). It returns the server as stored.
func (s *Store) PutMCPServer(ctx context.Context, tenant string, d events.MCPServerDef, env, headers map[string]string) (events.MCPServerDef, int64, error) {
	if err := ValidateMCPServer(d, env, headers); err != nil {
		return d, 0, err
	}
	if strings.TrimSpace(d.Name) == "" {
		d.Name = d.Slug
	}
	args, _ := json.Marshal(orSlice(d.Args))
	exposure, _ := json.Marshal(d.Exposure)
	creating := false
	rev, err := s.change(ctx, tenant, mcpServerTarget("mcp_server.put", tenant, d.ProjectID, d.Slug), func(tx pgx.Tx) error {
		if err := refuseManaged(ctx, tx, tenant, d.ProjectID, d.Slug); err != nil {
			return err
		}
		var id, oldURL string
		var old *string
		err := tx.QueryRow(ctx, `SELECT id::text, credential, url FROM artifacts.mcp_servers WHERE tenant_id = $1 AND project_id = $2 AND slug = $3
			FOR UPDATE`, tenant, d.ProjectID, d.Slug).Scan(&id, &old, &oldURL)
		if err != nil && mapErr(err) != ErrNotFound {
			return err
		}
		creating = id == ""
		if creating {
			id = uuid.NewString()
		}
		sec := mcpSecrets{Env: env, Headers: headers}
		if old != nil {
			kept, err := s.openMCPSecrets(*old, tenant, id)
			if err != nil {
				return err
			}
			if env == nil {
				sec.Env = kept.Env
			}
			if headers == nil {
				sec.Headers = kept.Headers
			}
			// A grant is for one URL (the resource its tokens are minted
			// for): a server moved elsewhere is authorized again.
			if d.Transport == events.MCPHTTP && d.URL == oldURL {
				sec.OAuth = kept.OAuth
			}
		}
		// What is kept must still fit the (possibly changed) transport.
		if err := ValidateMCPServer(d, sec.Env, sec.Headers); err != nil {
			return fmt.Errorf("%w (the stored ones; send them empty to clear them)", err)
		}
		var sealed, fp *string
		if len(sec.Env) > 0 || len(sec.Headers) > 0 || sec.OAuth != nil {
			envelope, f, err := s.sealMCPSecrets(ctx, tx, sec, tenant, id)
			if err != nil {
				return err
			}
			sealed, fp = &envelope, &f
		}
		envNames, _ := json.Marshal(orSlice(sortedKeys(sec.Env)))
		headerNames, _ := json.Marshal(orSlice(sortedKeys(sec.Headers)))
		_, err = tx.Exec(ctx, `INSERT INTO artifacts.mcp_servers (tenant_id, project_id, slug, id, name, transport, url, command, args,
				env_names, header_names, credential, key_fingerprint, exposure, enabled)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (tenant_id, project_id, slug) DO UPDATE SET name = excluded.name, transport = excluded.transport,
				url = excluded.url, command = excluded.command, args = excluded.args, env_names = excluded.env_names,
				header_names = excluded.header_names, credential = excluded.credential, key_fingerprint = excluded.key_fingerprint,
				exposure = excluded.exposure, enabled = excluded.enabled, updated_at = now()`,
			tenant, d.ProjectID, d.Slug, id, d.Name, string(d.Transport), d.URL, d.Command, args, envNames, headerNames,
			sealed, fp, exposure, !d.Disabled)
		return err
	})
	if err != nil {
		return d, 0, err
	}
	got, err := s.GetMCPServer(ctx, tenant, d.ProjectID, d.Slug)
	return got, rev, err
}

// DeleteMCPServer removes one server of a scope, unless an integration
// projects it (ErrConflict naming it).
func (s *Store) DeleteMCPServer(ctx context.Context, tenant, project, slug string) (int64, error) {
	return s.change(ctx, tenant, mcpServerTarget("mcp_server.delete", tenant, project, slug), func(tx pgx.Tx) error {
		if err := refuseManaged(ctx, tx, tenant, project, slug); err != nil {
			return err
		}
		return affected(tx.Exec(ctx, `DELETE FROM artifacts.mcp_servers WHERE tenant_id = $1 AND project_id = $2 AND slug = $3`,
			tenant, project, slug))
	})
}

// scanTail scans a row whose last columns are extra to scanMCPServer's.
type scanTail struct {
	pgx.Row
	extra any
}

func (r scanTail) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra)...) }

// mcpAD binds a server's sealed secrets to its tenant and id: an envelope
// copied to another row does not open.
func mcpAD(tenant, id string) string { return "mcp_server:" + tenant + ":" + id }

func mcpServerTarget(action, tenant, project, slug string) target {
	id := slug
	if project != "" {
		id = project + "/" + slug
	}
	return target{action: action, kind: "mcp_server", id: id, read: func(ctx context.Context, tx pgx.Tx) (any, string, error) {
		d, err := scanMCPServer(tx.QueryRow(ctx, `SELECT `+mcpColumns+` FROM artifacts.mcp_servers
			WHERE tenant_id = $1 AND project_id = $2 AND slug = $3`, tenant, project, slug))
		return absent(d, d.Name, err)
	}}
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func orSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
