package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/audit"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// The audit log over REST. Each service keeps its own part (the change and
// its entry commit together, in its own schema); the gateway reads its part
// from its table and the others' through their svc audit.list endpoints,
// and merges them by time. Tenant admins only; a page names the entries
// older than the cursor, so paging is stable while new entries arrive.

// auditSource is one service's part of a tenant's audit log.
type auditSource func(ctx context.Context, p identity.Principal, q events.AuditQuery) ([]events.AuditEntry, error)

// auditSources are the parts the gateway merges: its own, and each service
// that keeps one (svc.<service>.audit.list). A service that starts
// recording adds its reader here.
func (s *Server) auditSources() []auditSource {
	return []auditSource{s.store.AuditPage, s.chats.AuditPage, s.artifacts.AuditPage}
}

// exportTimeout bounds writing one export, past the server's WriteTimeout.
const exportTimeout = 30 * time.Minute

var (
	auditFrom   = Param{"from", "string", "RFC 3339 time: entries at or after it"}
	auditTo     = Param{"to", "string", "RFC 3339 time: entries before it"}
	auditActor  = Param{"actor", "string", "a user's id, or operator: that actor's changes only"}
	auditAction = Param{"action", "string", "an action (apikey.create), or every action under a prefix (project.*)"}
	auditType   = Param{"targetType", "string", "only changes to this kind of target (apikey, user, project, skill, account, budget …)"}
	auditTarget = Param{"targetId", "string", "only changes to this target"}
	auditCursor = Param{"cursor", "string", "the nextCursor of the previous page"}
	auditLimit  = Param{"limit", "integer", fmt.Sprintf("page size, 1 to %d (default %d)", audit.MaxPage, audit.DefaultPage)}
	auditFormat = Param{"format", "string", "jsonl (default: one entry per line) or csv"}
)

// auditRoutes are the audit log's and the budgets' routes.
func (s *Server) auditRoutes(key func(tag, method, path, summary string, ep endpoint, query ...Param) Route) []Route {
	forbidden := map[int]string{http.StatusForbidden: "the caller is not a tenant admin"}
	return []Route{
		withErrors(key("audit", "GET", "/v1/audit", "A page of the tenant's audit log, newest first: who changed what (keys, users, members, "+
			"projects, credentials, providers, permissions, profiles, skills, subagents, instructions, budgets), when, and the target "+
			"before and after, secrets redacted (tenant admins)", handle(s, http.StatusOK, s.auditPage),
			auditFrom, auditTo, auditActor, auditAction, auditType, auditTarget, auditCursor, auditLimit), forbidden),
		withErrors(key("audit", "GET", "/v1/audit/export", "The tenant's audit log matching the filters, newest first, streamed as JSON lines "+
			"(one AuditEntry each) or CSV (tenant admins)", s.stream("application/x-ndjson", s.auditExport),
			auditFrom, auditTo, auditActor, auditAction, auditType, auditTarget, auditFormat), forbidden),
		withErrors(key("usage", "GET", "/v1/budget", "The tenant's budgets, each with what the tenant spent in its current period and "+
			"when it resets; a spent one refuses sends (402 budget_exhausted) and stops running turns (tenant admins)",
			handle(s, http.StatusOK, s.budgets)), forbidden),
	}
}

func (s *Server) budgets(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (events.BudgetsReply, error) {
	if err := adminOnly(p, "read the tenant's budgets"); err != nil {
		return events.BudgetsReply{}, err
	}
	return s.chats.Budgets(ctx, p)
}

// auditQuery reads the filters of an audit request.
func auditQuery(r *http.Request) (events.AuditQuery, error) {
	v := r.URL.Query()
	q := events.AuditQuery{ActorID: v.Get("actor"), Action: v.Get("action"), TargetType: v.Get("targetType"), TargetID: v.Get("targetId")}
	var err error
	if q.From, err = timeParam(v.Get("from"), "from", time.Time{}); err != nil {
		return q, err
	}
	if q.To, err = timeParam(v.Get("to"), "to", time.Time{}); err != nil {
		return q, err
	}
	if c := v.Get("cursor"); c != "" {
		if q.Before, q.BeforeID, err = parseCursor(c); err != nil {
			return q, err
		}
	}
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 1 || q.Limit > audit.MaxPage {
			return q, apierr.New(apierr.ErrInvalid, "limit: want an integer from 1 to %d, not %q", audit.MaxPage, l)
		}
	}
	if err := audit.Check(q); err != nil {
		return q, err
	}
	return q, nil
}

// auditPage answers GET /v1/audit.
func (s *Server) auditPage(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.AuditPage, error) {
	if err := adminOnly(p, "read the audit log"); err != nil {
		return api.AuditPage{}, err
	}
	q, err := auditQuery(r)
	if err != nil {
		return api.AuditPage{}, err
	}
	if q.Limit == 0 {
		q.Limit = audit.DefaultPage
	}
	entries, err := s.mergedAudit(ctx, p, q)
	if err != nil {
		return api.AuditPage{}, err
	}
	out := api.AuditPage{Entries: entries}
	if len(entries) == q.Limit {
		last := entries[len(entries)-1]
		out.NextCursor = cursorOf(last)
	}
	return out, nil
}

// mergedAudit asks every source for its newest q.Limit entries older than
// the cursor and keeps the newest q.Limit of them all: exactly the page of
// the merged log. A source that cannot answer fails the request rather than
// leaving its entries out unsaid.
func (s *Server) mergedAudit(ctx context.Context, p identity.Principal, q events.AuditQuery) ([]events.AuditEntry, error) {
	all := []events.AuditEntry{}
	for _, src := range s.auditSources() {
		got, err := src(ctx, p, q)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, func(a, b events.AuditEntry) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return all[:min(len(all), q.Limit)], nil
}

// auditExport answers GET /v1/audit/export: every entry matching the
// filters, page by page, as JSON lines or CSV.
func (s *Server) auditExport(w http.ResponseWriter, r *http.Request, p identity.Principal) error {
	ctx := r.Context()
	if err := adminOnly(p, "export the audit log"); err != nil {
		return err
	}
	q, err := auditQuery(r)
	if err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	media, ext := "application/x-ndjson", "jsonl"
	switch format {
	case "", "jsonl":
	case "csv":
		media, ext = "text/csv; charset=utf-8", "csv"
	default:
		return apierr.New(apierr.ErrInvalid, "format: want jsonl or csv, not %q", format)
	}
	q.Limit = audit.MaxPage
	page, err := s.mergedAudit(ctx, p, q) // the first page before the header: a failure is still a proper error
	if err != nil {
		return err
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(exportTimeout))
	w.Header().Set("Content-Type", media)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "audit." + ext}))
	w.WriteHeader(http.StatusOK)
	out := newAuditWriter(w, ext == "csv")
	for {
		for _, e := range page {
			if err := out.write(e); err != nil {
				return nil // the client went away
			}
		}
		if len(page) < q.Limit {
			return out.flush()
		}
		q.Before, q.BeforeID = page[len(page)-1].At, page[len(page)-1].ID
		if page, err = s.mergedAudit(ctx, p, q); err != nil {
			s.logger.ErrorContext(ctx, "audit export cut short", "tenant", p.TenantID, "err", err)
			panic(http.ErrAbortHandler) // a cut stream, never a valid-looking partial export
		}
		_ = out.flush()
	}
}

// auditWriter writes entries as JSON lines or CSV rows.
type auditWriter struct {
	json *json.Encoder
	csv  *csv.Writer
}

// auditColumns head the CSV export.
var auditColumns = []string{"id", "at", "service", "actor_id", "actor_name", "action", "target_type", "target_id", "target_name", "before", "after"}

func newAuditWriter(w http.ResponseWriter, asCSV bool) *auditWriter {
	if !asCSV {
		return &auditWriter{json: json.NewEncoder(w)}
	}
	c := csv.NewWriter(w)
	_ = c.Write(auditColumns)
	return &auditWriter{csv: c}
}

func (a *auditWriter) write(e events.AuditEntry) error {
	if a.json != nil {
		return a.json.Encode(e)
	}
	return a.csv.Write([]string{e.ID, e.At.Format(time.RFC3339Nano), e.Service, e.Actor.ID, e.Actor.Name, e.Action, e.Target.Type,
		e.Target.ID, e.Target.Name, string(e.Before), string(e.After)})
}

func (a *auditWriter) flush() error {
	if a.csv != nil {
		a.csv.Flush()
		return a.csv.Error()
	}
	return nil
}

// cursorOf is the cursor of the page after e: its time and id.
func cursorOf(e events.AuditEntry) string {
	return base64.RawURLEncoding.EncodeToString([]byte(e.At.UTC().Format(time.RFC3339Nano) + " " + e.ID))
}

// parseCursor reads a cursor cursorOf made.
func parseCursor(c string) (time.Time, string, error) {
	bad := apierr.New(apierr.ErrInvalid, "cursor: not one this API gave out")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", bad
	}
	at, id, ok := strings.Cut(string(raw), " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || len(id) != 36 {
		return time.Time{}, "", bad
	}
	return t, id, nil
}
