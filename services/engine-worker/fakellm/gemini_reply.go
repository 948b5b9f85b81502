package fakellm

import (
	"context"
	"encoding/json"
	"net/http"
)

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiContent struct {
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason string        `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

type geminiBody struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

func geminiBodyOf(t turn, rep reply, parts []map[string]any, last bool, id string) geminiBody {
	c := geminiCandidate{Content: geminiContent{Role: "model", Parts: parts}}
	if last {
		c.FinishReason = "STOP"
	}
	return geminiBody{
		Candidates:    []geminiCandidate{c},
		UsageMetadata: geminiUsage{rep.inputTokens, rep.outputTokens, rep.inputTokens + rep.outputTokens},
		ModelVersion:  t.model,
		ResponseID:    id,
	}
}

func functionCallPart(st step) map[string]any {
	return map[string]any{"functionCall": map[string]any{"name": st.tool, "args": json.RawMessage(st.args)}}
}

// geminiResponse is the non-streaming answer: every step as one part.
func geminiResponse(t turn, rep reply) geminiBody {
	parts := []map[string]any{}
	for _, st := range rep.steps {
		switch st.kind {
		case thinkingStep:
			parts = append(parts, map[string]any{"text": st.text(), "thought": true})
		case textStep:
			parts = append(parts, map[string]any{"text": st.text()})
		case toolStep:
			parts = append(parts, functionCallPart(st))
		}
	}
	return geminiBodyOf(t, rep, parts, true, newID(""))
}

// geminiPiece is one streamed chunk's single part.
type geminiPiece struct {
	part map[string]any
	text bool // a text delta, after which a slow reply stalls
}

func geminiPieces(rep reply) []geminiPiece {
	var out []geminiPiece
	for _, st := range rep.steps {
		switch st.kind {
		case thinkingStep:
			for _, d := range st.deltas {
				out = append(out, geminiPiece{part: map[string]any{"text": d, "thought": true}})
			}
		case textStep:
			for _, d := range st.deltas {
				out = append(out, geminiPiece{part: map[string]any{"text": d}, text: true})
			}
		case toolStep:
			out = append(out, geminiPiece{part: functionCallPart(st)})
		}
	}
	return out
}

// geminiChunks is the stream as a list of response chunks; the last one
// carries finishReason.
func geminiChunks(t turn, rep reply) []geminiBody {
	id := newID("")
	pieces := geminiPieces(rep)
	out := make([]geminiBody, 0, len(pieces))
	for i, p := range pieces {
		out = append(out, geminiBodyOf(t, rep, []map[string]any{p.part}, i == len(pieces)-1, id))
	}
	return out
}

// geminiStream writes the chunks as "data:" lines. Gemini streams have no
// event names and no keep-alive the SDKs accept: the Go SDK fails on SSE
// comment lines and the JS SDK's line matcher stalls on them. So a
// @@SLOW@@ stall is silent, and a client hanging up is noticed through the
// request context.
func (s *Server) geminiStream(ctx context.Context, w http.ResponseWriter, t turn, rep reply) error {
	sw := startSSE(w)
	pace := s.pacer(rep, nil)
	pieces := geminiPieces(rep)
	for i, c := range geminiChunks(t, rep) {
		if err := sw.event(ctx, "", c); err != nil {
			return err
		}
		if pieces[i].text {
			if err := pace.afterTextDelta(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
