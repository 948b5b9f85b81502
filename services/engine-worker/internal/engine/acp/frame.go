package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// FrameKind says what a JSON-RPC message is.
type FrameKind int

// The frame kinds.
const (
	KindRequest      FrameKind = iota + 1 // method and id: the peer waits for an answer
	KindNotification                      // method, no id
	KindResponse                          // id and result or error
)

// Frame is one JSON-RPC 2.0 message, one line of an agent's stdout or
// stdin. Params and Result stay raw: each method decodes its own.
type Frame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// The JSON-RPC error codes the client answers with.
const (
	CodeInvalidParams  = -32602
	CodeMethodNotFound = -32601
	CodeInternal       = -32603
	// CodeRefused is the application error of a refused fs request (a
	// path outside the workspace, a file that does not exist).
	CodeRefused = -32000
)

// Error renders the error with its code and data.
func (e *RPCError) Error() string {
	msg := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if d := dataText(e.Data); d != "" && d != e.Message {
		msg += ": " + d
	}
	return msg
}

// dataText renders an error's data: a string as it is, an object's
// "message" or "details" when it has one, else the compact JSON.
func dataText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
		Details string `json:"details"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if obj.Message != "" {
			return obj.Message
		}
		if obj.Details != "" {
			return obj.Details
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// ErrNotJSONRPC is wrapped by DecodeFrame for a line that is not a
// JSON-RPC 2.0 message (agents print a stray log line now and then).
var ErrNotJSONRPC = errors.New("not a JSON-RPC message")

// DecodeFrame decodes one line. It accepts a JSON object with a method
// (request or notification) or with an id and a result or error
// (response); the id must be a string, a number or null. A missing
// "jsonrpc" is tolerated, another version is not.
func DecodeFrame(line []byte) (Frame, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Frame{}, fmt.Errorf("%w: %.60q", ErrNotJSONRPC, line)
	}
	var f Frame
	if err := json.Unmarshal(line, &f); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrNotJSONRPC, err)
	}
	if f.JSONRPC != "" && f.JSONRPC != "2.0" {
		return Frame{}, fmt.Errorf("%w: jsonrpc %q", ErrNotJSONRPC, f.JSONRPC)
	}
	if len(f.ID) > 0 && !validID(f.ID) {
		return Frame{}, fmt.Errorf("%w: id %s", ErrNotJSONRPC, f.ID)
	}
	if f.Kind() == 0 {
		return Frame{}, fmt.Errorf("%w: neither a method nor a response", ErrNotJSONRPC)
	}
	return f, nil
}

// Kind classifies the frame; 0 when it is none of the kinds.
func (f Frame) Kind() FrameKind {
	switch {
	case f.Method != "" && len(f.ID) > 0:
		return KindRequest
	case f.Method != "":
		return KindNotification
	case len(f.ID) > 0 && (len(f.Result) > 0 || f.Error != nil):
		return KindResponse
	}
	return 0
}

// validID reports whether raw is a JSON string, number or null.
func validID(raw json.RawMessage) bool {
	switch raw[0] {
	case '"':
		var s string
		return json.Unmarshal(raw, &s) == nil
	case 'n':
		return string(raw) == "null"
	}
	var n json.Number
	return json.Unmarshal(raw, &n) == nil
}

// idKey is the map key of a response id: our own ids are integers, so the
// compact text is enough.
func idKey(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
