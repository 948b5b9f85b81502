package api

import "clopen.dev/pkg/events"

// AuditPage is a page of the tenant's audit log, newest first: the entries
// of every service merged by time.
type AuditPage struct {
	Entries    []events.AuditEntry `json:"entries"`
	NextCursor string              `json:"nextCursor,omitempty" doc:"Pass as cursor to get the next (older) page; absent on the last page."`
}
