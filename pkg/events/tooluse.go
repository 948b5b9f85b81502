package events

import (
	"encoding/json"
	"fmt"
)

// ToolUseBlock is one tool call of an assistant message:
// {"type":"tool_use","id","name","input","result","subActivities","skillPrompt","interrupted"}.
//
// Adapters fill ID, Name (a canonical name, see ToCanonicalToolName) and
// Input. Result, SubActivities, SkillPrompt and Interrupted are enrichment
// that the display layer fills; adapters leave them zero, which encodes as
// result null, subActivities [], skillPrompt null and interrupted false.
type ToolUseBlock struct {
	ID   string
	Name string
	// Input is the canonical input, always a JSON object; empty encodes as {}
	// and decoding never leaves it empty.
	Input json.RawMessage
	// Result is the stitched tool result; empty encodes as null.
	Result        json.RawMessage
	SubActivities []SubActivity
	SkillPrompt   string // "" is null
	Interrupted   bool
}

// BlockType implements Block.
func (ToolUseBlock) BlockType() string { return BlockToolUse }

// MarshalJSON implements json.Marshaler. It refuses an Input that is not a
// JSON object.
func (b ToolUseBlock) MarshalJSON() ([]byte, error) {
	if err := firstErr(checkObject("input", b.Input), checkRaw("result", b.Result)); err != nil {
		return nil, encodeErr(BlockToolUse, err)
	}
	subs := b.SubActivities
	if subs == nil {
		subs = []SubActivity{}
	}
	return marshal(struct {
		Type          string          `json:"type"`
		ID            string          `json:"id"`
		Name          string          `json:"name"`
		Input         json.RawMessage `json:"input"`
		Result        json.RawMessage `json:"result"`
		SubActivities []SubActivity   `json:"subActivities"`
		SkillPrompt   *string         `json:"skillPrompt"`
		Interrupted   bool            `json:"interrupted"`
	}{BlockToolUse, b.ID, b.Name, rawOr(b.Input, "{}"), rawOr(b.Result, "null"), subs, nullable(b.SkillPrompt), b.Interrupted})
}

func decodeToolUse(d *dec) Block {
	b := ToolUseBlock{
		ID:          d.str("id"),
		Name:        d.str("name"),
		Input:       d.rawObject("input"),
		Result:      d.rawValue("result"),
		SkillPrompt: d.str("skillPrompt"),
		Interrupted: d.boolean("interrupted"),
	}
	d.each("subActivities", func(e *dec) {
		b.SubActivities = append(b.SubActivities, decodeSubActivity(e))
	})
	return b
}

// The sub-activity discriminators.
const (
	SubActivityToolUse = "tool_use"
	SubActivityText    = "text"
)

// SubActivity is one thing a sub-agent did, shown inside its parent's
// Agent/Task/Workflow tool call: {"type":"tool_use","name","input","result"}
// or {"type":"text","text"}. Only the fields of Type are encoded.
type SubActivity struct {
	Type   string          // SubActivityToolUse or SubActivityText
	Name   string          // tool_use: the canonical tool name
	Input  json.RawMessage // tool_use: a JSON object; empty encodes as {}
	Result json.RawMessage // tool_use: any JSON; empty encodes as null
	Text   string          // text
}

// MarshalJSON implements json.Marshaler.
func (s SubActivity) MarshalJSON() ([]byte, error) {
	switch s.Type {
	case SubActivityText:
		return marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{s.Type, s.Text})
	case SubActivityToolUse:
		if err := firstErr(checkObject("input", s.Input), checkRaw("result", s.Result)); err != nil {
			return nil, encodeErr("sub-activity", err)
		}
		return marshal(struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Input  json.RawMessage `json:"input"`
			Result json.RawMessage `json:"result"`
		}{s.Type, s.Name, rawOr(s.Input, "{}"), rawOr(s.Result, "null")})
	}
	return nil, encodeErr("sub-activity", fmt.Errorf("type: invalid value %q", s.Type))
}

// UnmarshalJSON decodes a sub-activity strictly; an unknown type is an error.
func (s *SubActivity) UnmarshalJSON(data []byte) error {
	var err error
	v := decodeSubActivity(openObject(data, "", &err))
	if err != nil {
		return withType(err, "sub-activity")
	}
	*s = v
	return nil
}

func decodeSubActivity(d *dec) SubActivity {
	switch typ := d.reqStr("type"); typ {
	case SubActivityText:
		return SubActivity{Type: typ, Text: d.str("text")}
	case SubActivityToolUse:
		return SubActivity{Type: typ, Name: d.str("name"), Input: d.rawObject("input"), Result: d.rawValue("result")}
	default:
		if !d.failed() {
			d.failf("type", "invalid value %q", typ)
		}
	}
	return SubActivity{}
}
