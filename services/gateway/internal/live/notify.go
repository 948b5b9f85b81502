package live

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
)

// subscribeNotify subscribes to the notifications of every project the
// principal may see: one wildcard for an admin (which also covers projects
// created later), one subscription per membership otherwise. Failing to
// subscribe costs notifications, not the connection.
func (c *conn) subscribeNotify(ctx context.Context) {
	var subjects []string
	if c.p.IsAdmin() {
		if events.ValidToken(c.p.TenantID) == nil {
			subjects = append(subjects, "notify."+c.p.TenantID+".*")
		}
	} else {
		projects, err := c.h.d.Projects.ListProjects(ctx, c.p)
		if err != nil {
			c.h.d.Logger.Warn("list projects for notifications", "tenant_id", c.p.TenantID, "user_id", c.p.UserID, "err", err)
			return
		}
		for _, pr := range projects {
			if s, err := events.NotifySubject(c.p.TenantID, pr.ID); err == nil {
				subjects = append(subjects, s)
			}
		}
	}
	for _, subject := range subjects {
		sub, err := c.h.d.NATS.Subscribe(subject, c.onNotify)
		if err != nil {
			c.h.d.Logger.Warn("subscribe notifications", "subject", subject, "err", err)
			continue
		}
		c.subs = append(c.subs, sub)
	}
}

// onNotify forwards a project notification (a ChatEvent) as an event frame
// without a cursor, unless it is about the joined session, whose events
// arrive through CHAT.
func (c *conn) onNotify(m *nats.Msg) {
	var ev struct {
		ChatSessionID string `json:"chatSessionId"`
	}
	if json.Unmarshal(m.Data, &ev) != nil {
		return
	}
	if ev.ChatSessionID != "" && ev.ChatSessionID == *c.session.Load() {
		return
	}
	c.send(events.ServerFrame{Type: events.WSFrameEvent, Session: ev.ChatSessionID, Event: m.Data}, "", 0)
}
