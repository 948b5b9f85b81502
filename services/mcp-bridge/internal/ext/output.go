package ext

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capOutput cuts a tool result to max bytes: text is kept up to what is
// left of max, other content (an image, a resource) is kept whole while it
// fits and dropped otherwise, structured content is dropped when it does
// not fit, and a note at the end says how much was cut.
func capOutput(res *mcp.CallToolResult, max int) *mcp.CallToolResult {
	left, cut := max, 0
	kept := make([]mcp.Content, 0, len(res.Content))
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if len(t.Text) <= left {
				left -= len(t.Text)
				kept = append(kept, c)
				continue
			}
			cut += len(t.Text) - left
			tc := *t
			tc.Text = validPrefix(t.Text, left)
			left = 0
			kept = append(kept, &tc)
			continue
		}
		raw, _ := json.Marshal(c)
		if len(raw) <= left {
			left -= len(raw)
			kept = append(kept, c)
			continue
		}
		cut += len(raw)
	}
	out := *res
	if res.StructuredContent != nil {
		if raw, _ := json.Marshal(res.StructuredContent); len(raw) > max {
			out.StructuredContent = nil
			cut += len(raw)
		}
	}
	if cut > 0 {
		kept = append(kept, &mcp.TextContent{Text: fmt.Sprintf("\n[output truncated by the MCP bridge: %d bytes over its %d-byte limit were left out]", cut, max)})
	}
	out.Content = kept
	return &out
}

// validPrefix is s cut to at most n bytes, not inside a UTF-8 sequence.
func validPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
