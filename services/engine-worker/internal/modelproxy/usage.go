package modelproxy

import (
	"bytes"
	"encoding/json"

	"clopen.dev/pkg/events"
)

// usageFields are the token counts of one usage object, in any of the
// providers' spellings; a nil field was absent.
type usageFields struct {
	// Anthropic Messages and OpenAI Responses.
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	InputDetails  *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	// OpenAI Chat Completions.
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	// Gemini usageMetadata.
	PromptTokenCount        *int64 `json:"promptTokenCount"`
	CandidatesTokenCount    *int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      *int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount *int64 `json:"cachedContentTokenCount"`
}

// envelope is where a response or stream event carries its usage:
// top-level usage (Anthropic message and message_delta, Chat Completions,
// Responses), message.usage (Anthropic message_start), response.usage
// (Responses' response.completed) or usageMetadata (Gemini).
type envelope struct {
	Usage   *usageFields `json:"usage"`
	Message *struct {
		Usage *usageFields `json:"usage"`
	} `json:"message"`
	Response *struct {
		Usage *usageFields `json:"usage"`
	} `json:"response"`
	UsageMetadata *usageFields `json:"usageMetadata"`
}

// counts is one response's usage as read so far. Providers report running
// totals within a response (message_start then message_delta, Gemini's
// every chunk), so a field seen again replaces what was read before.
type counts struct {
	input, output, cacheWrite, cacheRead int64
	seen                                 bool
}

func (c *counts) set(dst *int64, v *int64) {
	if v != nil && *v >= 0 {
		*dst, c.seen = *v, true
	}
}

// merge reads the usage objects of one JSON document (a whole response or
// one stream event) into c; it reports whether the document was JSON.
func (c *counts) merge(doc []byte) bool {
	var e envelope
	if json.Unmarshal(doc, &e) != nil {
		return false
	}
	for _, u := range []*usageFields{e.Usage, messageUsage(e), responseUsage(e), e.UsageMetadata} {
		if u != nil {
			c.add(u)
		}
	}
	return true
}

func messageUsage(e envelope) *usageFields {
	if e.Message == nil {
		return nil
	}
	return e.Message.Usage
}

func responseUsage(e envelope) *usageFields {
	if e.Response == nil {
		return nil
	}
	return e.Response.Usage
}

// add reads one usage object. The record is Anthropic's shape, as
// events.TokenUsage is: input tokens exclude the cached ones, which OpenAI
// and Gemini count inside their prompt totals.
func (c *counts) add(u *usageFields) {
	c.set(&c.input, u.InputTokens)
	c.set(&c.output, u.OutputTokens)
	c.set(&c.cacheWrite, u.CacheCreation)
	c.set(&c.cacheRead, u.CacheRead)
	if u.InputDetails != nil && u.InputDetails.Cached != nil && u.InputTokens != nil {
		c.set(&c.cacheRead, u.InputDetails.Cached)
		c.input = max(*u.InputTokens-*u.InputDetails.Cached, 0)
	}
	c.set(&c.input, u.PromptTokens)
	c.set(&c.output, u.CompletionTokens)
	if u.PromptDetails != nil && u.PromptDetails.Cached != nil && u.PromptTokens != nil {
		c.set(&c.cacheRead, u.PromptDetails.Cached)
		c.input = max(*u.PromptTokens-*u.PromptDetails.Cached, 0)
	}
	if u.PromptTokenCount != nil {
		cached := int64(0)
		if u.CachedContentTokenCount != nil {
			cached = *u.CachedContentTokenCount
			c.set(&c.cacheRead, u.CachedContentTokenCount)
		}
		in := max(*u.PromptTokenCount-cached, 0)
		c.set(&c.input, &in)
	}
	if u.CandidatesTokenCount != nil || u.ThoughtsTokenCount != nil {
		var out int64
		for _, v := range []*int64{u.CandidatesTokenCount, u.ThoughtsTokenCount} {
			if v != nil && *v > 0 {
				out += *v
			}
		}
		c.set(&c.output, &out)
	}
}

func (c counts) usage() events.TokenUsage {
	return events.TokenUsage{InputTokens: c.input, OutputTokens: c.output,
		CacheCreationInputTokens: c.cacheWrite, CacheReadInputTokens: c.cacheRead}
}

// maxBody bounds what a non-streamed response keeps to read its usage
// from; a bigger one goes uncounted (and is passed on whole all the same).
const maxBody = 8 << 20

// maxLine bounds one line of an event stream kept to read usage from.
const maxLine = 4 << 20

// scanner reads the usage of one response as its body passes: the data
// lines of an event stream one by one, or the whole of a JSON body.
type scanner struct {
	stream   bool
	buf      []byte
	overflow bool
	c        counts
}

// Write takes the next bytes of the body.
func (s *scanner) Write(p []byte) {
	if !s.stream {
		if len(s.buf)+len(p) > maxBody {
			s.overflow, s.buf = true, nil
		}
		if !s.overflow {
			s.buf = append(s.buf, p...)
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.appendLine(p)
			return
		}
		s.appendLine(p[:i])
		s.line()
		p = p[i+1:]
	}
}

func (s *scanner) appendLine(p []byte) {
	if s.overflow {
		return
	}
	if len(s.buf)+len(p) > maxLine {
		s.overflow, s.buf = true, s.buf[:0]
		return
	}
	s.buf = append(s.buf, p...)
}

// line reads one complete line of an event stream.
func (s *scanner) line() {
	l := bytes.TrimRight(s.buf, "\r")
	if !s.overflow {
		if data, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			s.c.merge(bytes.TrimSpace(data))
		}
	}
	s.buf, s.overflow = s.buf[:0], false
}

// Done ends the body and returns the response's usage; ok is false when it
// carried none.
func (s *scanner) Done() (u events.TokenUsage, ok bool) {
	if s.stream {
		if len(s.buf) > 0 {
			s.line()
		}
	} else if !s.overflow && len(s.buf) > 0 {
		s.c.merge(s.buf)
		s.buf = nil
	}
	return s.c.usage(), s.c.seen
}

// ParseUsage reads the usage of a whole response body: an event stream
// when stream is set, else one JSON document.
func ParseUsage(body []byte, stream bool) (events.TokenUsage, bool) {
	return ParseUsageChunks([][]byte{body}, stream)
}

// ParseUsageChunks is ParseUsage of a body that arrives in chunks.
func ParseUsageChunks(chunks [][]byte, stream bool) (events.TokenUsage, bool) {
	s := &scanner{stream: stream}
	for _, c := range chunks {
		s.Write(c)
	}
	return s.Done()
}
