package httpapi

import (
	"net/http"
	"strconv"

	"clopen.dev/services/gateway/internal/apierr"
)

// maxLimit caps every page size a client asks for.
const maxLimit = 1000

// Param is a documented query parameter.
type Param struct {
	Name        string
	Type        string // integer | string
	Description string
}

var (
	limitParam      = Param{"limit", "integer", "page size, 1 to 1000"}
	searchParam     = Param{"q", "string", "keep the sessions whose title or head title contains this text (any case), at most 200 bytes"}
	afterRowParam   = Param{"afterRowId", "string", "return the messages saved after this row"}
	afterEpochParam = Param{"afterEpoch", "integer", "with afterSeq: return the events after (afterEpoch, afterSeq)"}
	afterSeqParam   = Param{"afterSeq", "integer", "see afterEpoch"}
	userIDParam     = Param{"userId", "string", "admins only: list this user's keys instead of the caller's"}
	projectIDParam  = Param{"projectId", "string", "a project the caller may use: its layers and default profile apply"}
	profileIDParam  = Param{"profileId", "string", "the profile to apply; empty: the project's default"}
	typeParam       = Param{"type", "string", "skill | subagent"}
	engineParam     = Param{"engine", "string", "the engine whose directories to scan"}
)

// limit reads ?limit=, def when absent.
func limit(r *http.Request, def int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, apierr.New(apierr.ErrInvalid, "limit: want an integer from 1 to %d, not %q", maxLimit, v)
	}
	return n, nil
}

// uintParam reads an unsigned integer query parameter, 0 when absent.
func uintParam(r *http.Request, name string) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, apierr.New(apierr.ErrInvalid, "%s: want an unsigned integer, not %q", name, v)
	}
	return n, nil
}
