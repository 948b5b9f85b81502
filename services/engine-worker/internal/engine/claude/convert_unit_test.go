package claude_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/claude"
)

// convertLines runs lines through one converter and returns the outputs
// encoded, without the fields every message shares.
func convertLines(t *testing.T, lines ...string) []string {
	t.Helper()
	c := &claude.Converter{Model: "m", Now: fixedNow}
	var out []string
	for _, s := range lines {
		l, err := claude.DecodeLine([]byte(s))
		if err != nil {
			t.Fatalf("DecodeLine(%s): %v", s, err)
		}
		for _, o := range c.Convert(l) {
			b, err := events.EncodeOutput(o)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			delete(m, "createdAt")
			delete(m, "engine")
			b, _ = json.Marshal(m)
			out = append(out, string(b))
		}
	}
	return out
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want []string
	}{
		{
			name: "sub-agent children carry the parent call and stream nothing",
			give: []string{
				`{"type":"assistant","session_id":"s","message":{"id":"m1","content":[{"type":"tool_use","id":"tu1","name":"Task","input":{"prompt":"p","description":"d","subagent_type":"explore"}}]}}`,
				`{"type":"stream_event","session_id":"s","parent_tool_use_id":"tu1","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`,
				`{"type":"stream_event","session_id":"s","parent_tool_use_id":"tu1","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}`,
				`{"type":"assistant","session_id":"s","parent_tool_use_id":"tu1","message":{"id":"m2","content":[{"type":"tool_use","id":"tu2","name":"Read","input":{"file_path":"/a"}}]}}`,
				`{"type":"user","session_id":"s","uuid":"u1","parent_tool_use_id":"tu1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu2","content":[{"type":"text","text":"data"}]}]}}`,
				`{"type":"user","session_id":"s","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"done","is_error":false}]}}`,
			},
			want: []string{
				`{"content":[{"id":"tu1","input":{"description":"d","prompt":"p","subagentType":"explore"},"interrupted":false,"name":"Agent","result":null,"skillPrompt":null,"subActivities":[],"type":"tool_use"}],"messageId":"m1","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"sessionId":"s","stopReason":"tool_use","type":"assistant","usage":null}`,
				`{"content":[{"id":"tu2","input":{"filePath":"/a"},"interrupted":false,"name":"Read","result":null,"skillPrompt":null,"subActivities":[],"type":"tool_use"}],"messageId":"m2","parent":{"messageId":null,"sessionId":null,"toolUseId":"tu1"},"sessionId":"s","stopReason":"tool_use","type":"assistant","usage":null}`,
				`{"content":[{"content":"data","isError":false,"toolUseId":"tu2","type":"tool_result"}],"messageId":"u1","parent":{"messageId":null,"sessionId":null,"toolUseId":"tu1"},"sender":{"id":"","name":""},"sessionId":"s","synthetic":true,"type":"user"}`,
				`{"content":[{"content":"done","isError":false,"toolUseId":"tu1","type":"tool_result"}],"messageId":"u2","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"sender":{"id":"","name":""},"sessionId":"s","synthetic":true,"type":"user"}`,
			},
		},
		{
			name: "blocks of one message get split ids; empty thinking is dropped; unknown tools are marked",
			give: []string{
				`{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"thinking","thinking":"  "}]}}`,
				`{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"text","text":"a"}]}}`,
				`{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Frobnicate","input":"not an object"}]}}`,
				`{"type":"assistant","session_id":"s","message":{"id":"m","content":[{"type":"tool_use","id":"t2","name":"mcp__probe__echo","input":{"text":"hi"}}]}}`,
			},
			want: []string{
				`{"content":[{"text":"a","type":"text"}],"messageId":"m","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"sessionId":"s","stopReason":null,"type":"assistant","usage":null}`,
				`{"content":[{"id":"t1","input":{},"interrupted":false,"name":"Unknown:Frobnicate","result":null,"skillPrompt":null,"subActivities":[],"type":"tool_use"}],"messageId":"m:1","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"sessionId":"s","stopReason":"tool_use","type":"assistant","usage":null}`,
				`{"content":[{"id":"t2","input":{"text":"hi"},"interrupted":false,"name":"mcp__probe__echo","result":null,"skillPrompt":null,"subActivities":[],"type":"tool_use"}],"messageId":"m:2","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"sessionId":"s","stopReason":"tool_use","type":"assistant","usage":null}`,
			},
		},
		{
			name: "a reasoning stream stops before text starts",
			give: []string{
				`{"type":"stream_event","session_id":"s","event":{"type":"content_block_start","index":0,"content_block":{"type":"thinking"}}}`,
				`{"type":"stream_event","session_id":"s","event":{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}}`,
				`{"type":"stream_event","session_id":"s","event":{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta"}}}`,
				`{"type":"stream_event","session_id":"s","event":{"type":"content_block_start","index":1,"content_block":{"type":"text"}}}`,
				`{"type":"stream_event","session_id":"s","event":{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}}`,
				`{"type":"stream_event","session_id":"s","event":{"type":"message_stop"}}`,
			},
			want: []string{
				`{"event":"start","reasoning":true,"sessionId":"s","type":"stream_event"}`,
				`{"event":"delta","reasoning":true,"sessionId":"s","text":"hm","type":"stream_event"}`,
				`{"event":"stop","reasoning":true,"sessionId":"s","type":"stream_event"}`,
				`{"event":"start","reasoning":false,"sessionId":"s","type":"stream_event"}`,
				`{"event":"delta","reasoning":false,"sessionId":"s","text":"hi","type":"stream_event"}`,
				`{"event":"stop","reasoning":false,"sessionId":"s","type":"stream_event"}`,
			},
		},
		{
			name: "rate limits: allowed is not news",
			give: []string{
				`{"type":"rate_limit_event","session_id":"s","rate_limit_info":{"status":"allowed","resetsAt":1}}`,
				`{"type":"rate_limit_event","session_id":"s","rate_limit_info":{"status":"allowed_warning","resetsAt":1767225600,"rateLimitType":"five_hour","utilization":0.9}}`,
				`{"type":"rate_limit_event","session_id":"s","rate_limit_info":{"status":"rejected","rateLimitType":"weekly_new"}}`,
			},
			want: []string{
				`{"rateLimitType":"five_hour","resetsAt":1767225600,"sessionId":"s","status":"allowed_warning","type":"rate_limit","utilization":0.9}`,
				`{"rateLimitType":null,"resetsAt":null,"sessionId":"s","status":"rejected","type":"rate_limit","utilization":0}`,
			},
		},
		{
			name: "compaction, unknown system lines and interrupt markers",
			give: []string{
				`{"type":"system","subtype":"compact_boundary","session_id":"s","uuid":"c1","compact_metadata":{"trigger":"manual","pre_tokens":1234}}`,
				`{"type":"system","subtype":"api_retry","session_id":"s","attempt":1,"max_retries":2,"error_status":529}`,
				`{"type":"user","session_id":"s","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}`,
				`{"type":"user","session_id":"s","message":{"role":"user","content":"plain"}}`,
			},
			want: []string{
				`{"messageId":"c1","parent":{"messageId":null,"sessionId":null,"toolUseId":null},"preTokens":1234,"sessionId":"s","trigger":"manual","type":"compact_boundary"}`,
			},
		},
		{
			name: "results",
			give: []string{
				`{"session_id":"s","usage":{"input_tokens":3,"output_tokens":4},"total_cost_usd":0.5,"num_turns":2,"stop_reason":"end_turn","subtype":"success","type":"result","is_error":false}`,
				`{"type":"result","subtype":"error_max_budget_usd","session_id":"s","is_error":true,"errors":["budget"]}`,
				`{"type":"result","subtype":"error_max_turns","session_id":"s","is_error":true,"errors":[]}`,
				`{"type":"result","subtype":"error_brand_new","session_id":"s","is_error":true}`,
				`{"type":"result","subtype":"success","session_id":"s","is_error":true,"api_error_status":529,"result":"API Error: overloaded"}`,
				`{"type":"result","subtype":"error_during_execution","session_id":"s","is_error":true,"terminal_reason":"aborted_streaming","errors":["[ede_diagnostic] x"]}`,
			},
			want: []string{
				`{"numTurns":2,"sessionId":"s","stopReason":"end_turn","subtype":"success","totalCostUsd":0.5,"type":"result","usage":{"cacheCreationInputTokens":0,"cacheReadInputTokens":0,"inputTokens":3,"outputTokens":4}}`,
				`{"errors":["budget"],"sessionId":"s","subtype":"error_max_budget","type":"result"}`,
				`{"errors":["Claude Code ended the turn with error max turns"],"sessionId":"s","subtype":"error_max_turns","type":"result"}`,
				`{"errors":["Claude Code ended the turn with error brand new"],"sessionId":"s","subtype":"error_during_execution","type":"result"}`,
				`{"errors":["API Error: overloaded (status 529)"],"sessionId":"s","subtype":"error_during_execution","type":"result"}`,
				`{"errors":["Interrupted by user"],"sessionId":"s","subtype":"error_during_execution","type":"result"}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := convertLines(t, tt.give...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Convert (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeLine(t *testing.T) {
	tests := []struct {
		give    string
		wantErr string
	}{
		{give: ``, wantErr: "not a JSON object"},
		{give: `[1]`, wantErr: "not a JSON object"},
		{give: `{"subtype":"x"}`, wantErr: "no type"},
		{give: `{"type":"assistant","message":"a string"}`, wantErr: "assistant line"},
		{give: `{"type":"system","subtype":"notification","message":"a string is fine here"}`},
		{give: `{"type":"result","result":{"an":"object"}}`},
		{give: `{"type":"brand_new","whatever":[1,2]}`},
	}
	for _, tt := range tests {
		_, err := claude.DecodeLine([]byte(tt.give))
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("DecodeLine(%s) = %v, want error containing %q", tt.give, err, tt.wantErr)
		}
	}
}
