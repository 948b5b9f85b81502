package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

var (
	fromParam    = Param{"from", "string", "RFC 3339 time: runs queued at or after it (default: 30 days before to)"}
	toParam      = Param{"to", "string", "RFC 3339 time: runs queued before it (default: now)"}
	groupByParam = Param{"groupBy", "string", "comma-separated dimensions to sum per: project, user, engine, model (default: none, one row)"}
	usageProject = Param{"projectId", "string", "only this project's runs"}
)

// defaultUsageRange is what a usage request without from covers.
const defaultUsageRange = 30 * 24 * time.Hour

// usage answers GET /v1/usage: the tokens, cost, runs and run time of the
// tenant's recorded runs (admins) or the caller's own (members) over a
// time range, summed per group.
func (s *Server) usage(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.UsageReply, error) {
	q := r.URL.Query()
	to, err := timeParam(q.Get("to"), "to", time.Now().UTC())
	if err != nil {
		return events.UsageReply{}, err
	}
	from, err := timeParam(q.Get("from"), "from", to.Add(-defaultUsageRange))
	if err != nil {
		return events.UsageReply{}, err
	}
	req := events.UsageRequest{From: from, To: to, ProjectID: q.Get("projectId")}
	if g := q.Get("groupBy"); g != "" {
		req.GroupBy = strings.Split(g, ",")
	}
	return s.chats.Usage(ctx, p, req)
}

// timeParam parses an RFC 3339 query value, def when it is empty.
func timeParam(v, name string, def time.Time) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, apierr.New(apierr.ErrInvalid, "%s: want an RFC 3339 time such as 2026-12-01T00:00:00Z, not %q", name, v)
	}
	return t.UTC(), nil
}
