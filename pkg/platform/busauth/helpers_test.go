package busauth_test

import (
	"slices"

	"github.com/nats-io/nats-server/v2/server"
)

func samePermissions(a, b *server.Permissions) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	same := func(x, y *server.SubjectPermission) bool {
		if x == nil || y == nil {
			return x == nil && y == nil
		}
		return sameSet(x.Allow, y.Allow) && sameSet(x.Deny, y.Deny)
	}
	if (a.Response == nil) != (b.Response == nil) ||
		(a.Response != nil && (a.Response.MaxMsgs != b.Response.MaxMsgs || a.Response.Expires != b.Response.Expires)) {
		return false
	}
	return same(a.Publish, b.Publish) && same(a.Subscribe, b.Subscribe)
}

func sameSet(x, y []string) bool {
	x, y = slices.Clone(x), slices.Clone(y)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
