package events

import (
	"encoding/json"
	"fmt"
)

// Block is one content block of a user or assistant message. The concrete
// types are TextBlock, ImageBlock, DocumentBlock, ToolResultBlock,
// ToolUseBlock and, for a "type" this version does not know, UnknownBlock;
// the unexported method keeps the set closed to this package. Decoders return
// the values, never pointers.
type Block interface {
	json.Marshaler
	// BlockType returns the wire discriminator, e.g. "tool_use".
	BlockType() string
	isBlock()
}

// The block discriminators.
const (
	BlockText       = "text"
	BlockImage      = "image"
	BlockDocument   = "document"
	BlockToolResult = "tool_result"
	BlockToolUse    = "tool_use"
)

// TextBlock is plain text: {"type":"text","text"}.
type TextBlock struct {
	Text string
}

// ImageBlock is an image attached by the user:
// {"type":"image","mediaType","data"} with Data in base64.
type ImageBlock struct {
	MediaType string
	Data      string
}

// DocumentBlock is a document (PDF and the like) attached by the user:
// {"type":"document","mediaType","data","title"}; an empty Title is null.
type DocumentBlock struct {
	MediaType string
	Data      string
	Title     string
}

// ToolResultBlock answers the tool call ToolUseID. It travels in a synthetic
// UserMessage whose parent.toolUseId is null:
// {"type":"tool_result","toolUseId","content","isError"}.
type ToolResultBlock struct {
	ToolUseID string
	Content   string
	IsError   bool
}

// UnknownBlock is a block whose "type" this version does not know. Raw holds
// the whole block, compacted; it encodes back to exactly those bytes.
type UnknownBlock struct {
	Type string
	Raw  json.RawMessage
}

// BlockType implements Block.
func (TextBlock) BlockType() string { return BlockText }

// BlockType implements Block.
func (ImageBlock) BlockType() string { return BlockImage }

// BlockType implements Block.
func (DocumentBlock) BlockType() string { return BlockDocument }

// BlockType implements Block.
func (ToolResultBlock) BlockType() string { return BlockToolResult }

// BlockType implements Block.
func (b UnknownBlock) BlockType() string { return b.Type }

func (TextBlock) isBlock()       {}
func (ImageBlock) isBlock()      {}
func (DocumentBlock) isBlock()   {}
func (ToolResultBlock) isBlock() {}
func (ToolUseBlock) isBlock()    {}
func (UnknownBlock) isBlock()    {}

// MarshalJSON implements json.Marshaler.
func (b TextBlock) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{BlockText, b.Text})
}

// MarshalJSON implements json.Marshaler.
func (b ImageBlock) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type      string `json:"type"`
		MediaType string `json:"mediaType"`
		Data      string `json:"data"`
	}{BlockImage, b.MediaType, b.Data})
}

// MarshalJSON implements json.Marshaler.
func (b DocumentBlock) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type      string  `json:"type"`
		MediaType string  `json:"mediaType"`
		Data      string  `json:"data"`
		Title     *string `json:"title"`
	}{BlockDocument, b.MediaType, b.Data, nullable(b.Title)})
}

// MarshalJSON implements json.Marshaler.
func (b ToolResultBlock) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type      string `json:"type"`
		ToolUseID string `json:"toolUseId"`
		Content   string `json:"content"`
		IsError   bool   `json:"isError"`
	}{BlockToolResult, b.ToolUseID, b.Content, b.IsError})
}

// MarshalJSON implements json.Marshaler: Raw as it is, or {"type":Type} when
// Raw is empty.
func (b UnknownBlock) MarshalJSON() ([]byte, error) { return marshalRaw("block", b.Type, b.Raw) }

// UnmarshalJSON decodes a text block strictly, as DecodeBlock does.
func (b *TextBlock) UnmarshalJSON(data []byte) error { return unmarshalBlock(data, b) }

// UnmarshalJSON decodes an image block strictly, as DecodeBlock does.
func (b *ImageBlock) UnmarshalJSON(data []byte) error { return unmarshalBlock(data, b) }

// UnmarshalJSON decodes a document block strictly, as DecodeBlock does.
func (b *DocumentBlock) UnmarshalJSON(data []byte) error { return unmarshalBlock(data, b) }

// UnmarshalJSON decodes a tool_result block strictly, as DecodeBlock does.
func (b *ToolResultBlock) UnmarshalJSON(data []byte) error { return unmarshalBlock(data, b) }

// UnmarshalJSON decodes a tool_use block strictly, as DecodeBlock does.
func (b *ToolUseBlock) UnmarshalJSON(data []byte) error { return unmarshalBlock(data, b) }

// UnmarshalJSON keeps any JSON object that has a string "type", compacted.
func (b *UnknownBlock) UnmarshalJSON(data []byte) error {
	typ, raw, err := unmarshalRaw(data, "block")
	if err == nil {
		*b = UnknownBlock{Type: typ, Raw: raw}
	}
	return err
}

var blockDecoders = map[string]func(*dec) Block{
	BlockText: func(d *dec) Block { return TextBlock{Text: d.str("text")} },
	BlockImage: func(d *dec) Block {
		return ImageBlock{MediaType: d.str("mediaType"), Data: d.str("data")}
	},
	BlockDocument: func(d *dec) Block {
		return DocumentBlock{MediaType: d.str("mediaType"), Data: d.str("data"), Title: d.str("title")}
	},
	BlockToolResult: func(d *dec) Block {
		return ToolResultBlock{ToolUseID: d.str("toolUseId"), Content: d.str("content"), IsError: d.boolean("isError")}
	},
	BlockToolUse: decodeToolUse,
}

// DecodeBlock decodes one content block. A known "type" decodes to its typed
// value, an unknown one to UnknownBlock; unknown fields are ignored. Every
// refusal is a *DecodeError.
func DecodeBlock(data []byte) (Block, error) {
	var err error
	d := openObject(data, "", &err)
	b := decodeBlock(d)
	if err != nil {
		return nil, withType(err, peekType(data, "type", "block"))
	}
	return b, nil
}

func decodeBlock(d *dec) Block {
	typ := d.reqStr("type")
	if d.failed() {
		return nil
	}
	fn, ok := blockDecoders[typ]
	if !ok {
		return UnknownBlock{Type: typ, Raw: compact(d.raw)}
	}
	return fn(d)
}

// decodeContent reads the block array key, refusing known block types that
// allowed does not list (unknown ones always pass).
func decodeContent(d *dec, key string, allowed ...string) []Block {
	var out []Block
	d.each(key, func(e *dec) {
		b := decodeBlock(e)
		if e.failed() {
			return
		}
		if _, known := blockDecoders[b.BlockType()]; known && !oneOf(b.BlockType(), allowed) {
			e.failf("type", "a %s block is not allowed here", b.BlockType())
			return
		}
		out = append(out, b)
	})
	return out
}

// encodeContent encodes blocks as a JSON array ([] when empty), refusing nil
// elements and known block types that allowed does not list.
func encodeContent(key string, blocks []Block, allowed ...string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(blocks))
	for i, b := range blocks {
		if isNil(b) {
			return nil, fmt.Errorf("%s: nil block", index(key, i))
		}
		if _, known := blockDecoders[b.BlockType()]; known && !oneOf(b.BlockType(), allowed) {
			return nil, fmt.Errorf("%s: a %s block is not allowed here", index(key, i), b.BlockType())
		}
		raw, err := b.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", index(key, i), err)
		}
		out = append(out, raw)
	}
	return out, nil
}

func unmarshalBlock[T Block](data []byte, dst *T) error {
	b, err := DecodeBlock(data)
	if err != nil {
		return err
	}
	v, ok := b.(T)
	if !ok {
		return &DecodeError{Type: b.BlockType(), Err: fmt.Errorf("want a %s block", (*dst).BlockType())}
	}
	*dst = v
	return nil
}
