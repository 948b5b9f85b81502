package claude

import (
	"cmp"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
)

// convertResult maps the CLI's result line. A success subtype that is an
// error (an API error the CLI gave up on) is a failure carrying the
// provider's status and message; an interrupted turn says so plainly
// instead of the CLI's diagnostics.
func convertResult(l Line) events.Output {
	r := events.Result{SessionID: l.SessionID}
	if l.Subtype == "success" && !l.IsError {
		r.Subtype = events.ResultSuccess
		r.NumTurns, r.TotalCostUSD, r.StopReason = l.NumTurns, l.TotalCostUSD, l.StopReason
		if u := usage(l.Usage); u != nil {
			r.Usage = *u
		}
		return r
	}
	switch l.Subtype {
	case "error_max_turns":
		r.Subtype = events.ResultErrorMaxTurns
	case "error_max_budget_usd":
		r.Subtype = events.ResultErrorMaxBudget
	default:
		r.Subtype = events.ResultErrorDuringExecution
	}
	r.Errors = resultErrors(l)
	return r
}

func resultErrors(l Line) []string {
	if Interrupted(l) {
		return []string{"Interrupted by user"}
	}
	var errs []string
	for _, e := range l.Errors {
		if e = strings.TrimSpace(e); e != "" && !strings.HasPrefix(e, "[ede_diagnostic]") {
			errs = append(errs, e)
		}
	}
	if len(errs) == 0 && strings.TrimSpace(l.Result) != "" {
		errs = append(errs, strings.TrimSpace(l.Result))
	}
	if len(errs) == 0 {
		errs = append(errs, "Claude Code ended the turn with "+strings.ReplaceAll(cmp.Or(l.Subtype, "an error"), "_", " "))
	}
	if l.APIErrorStatus != 0 && !strings.Contains(errs[0], strconv.Itoa(l.APIErrorStatus)) {
		errs[0] += " (status " + strconv.Itoa(l.APIErrorStatus) + ")"
	}
	return errs
}

// Interrupted reports whether a result line ends an interrupted turn.
func Interrupted(l Line) bool {
	return l.Type == "result" && strings.HasPrefix(l.TerminalReason, "aborted")
}

func rateLimit(l Line) []events.Output {
	info := l.RateLimitInfo
	if info == nil {
		return nil
	}
	status := events.RateLimitStatus(info.Status)
	if !status.Valid() { // "allowed" is not news
		return nil
	}
	rl := events.RateLimit{SessionID: l.SessionID, Status: status, Utilization: info.Utilization, ResetsAt: int64(info.ResetsAt)}
	if t := events.RateLimitType(info.RateLimitType); t.Valid() {
		rl.RateLimitType = t
	}
	return []events.Output{rl}
}

func usage(u *Usage) *events.TokenUsage {
	if u == nil {
		return nil
	}
	return &events.TokenUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens}
}
