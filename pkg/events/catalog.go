package events

import (
	"encoding/json"
	"fmt"
)

// This file holds the request and reply bodies of the engine workers'
// endpoints, svc.engine.<engine>.<op>: every worker that has an engine
// serves that engine's subjects in one queue group, so a request reaches
// exactly one of them. Requests embed the Caller; workers check its tenant
// and the account token before anything else.

// EngineService is the micro service name of the engine workers' catalog and
// generation endpoints.
const EngineService = "engine"

// Engine worker endpoints, under svc.engine.<engine>.<op>.
const (
	OpModels   = "models"
	OpGenerate = "generate"
)

// EngineSubject is the subject of an engine's op on the workers that have
// it: svc.engine.<engine>.<op>. The engine must be one of the engine types.
func EngineSubject(engine EngineType, op string) (string, error) {
	if !engine.Valid() {
		return "", fmt.Errorf("engine subject: %w: %q", ErrUnknownEngine, engine)
	}
	return join("svc", EngineService, string(engine), op)
}

// ModelsRequest asks a worker for an engine's model catalog as an account
// sees it; AccountID empty means the engine's active account, Provider empty
// every provider.
type ModelsRequest struct {
	Caller
	Engine    EngineType `json:"engine"`
	AccountID string     `json:"accountId,omitempty"`
	Provider  string     `json:"provider,omitempty"`
}

// ModelsReply is a catalog, the engine's default model first. A catalog that
// could not be read is empty, never an error and never a stale copy; Message
// then says why in words a picker can show.
type ModelsReply struct {
	Models  []EngineModel `json:"models"`
	Message string        `json:"message,omitempty"`
}

// Generators a GenerateRequest can name: each has its own prompt and schema
// on the worker. The artifact drafts reuse the artifact type names.
const (
	GenerateCommitMessage = "commit-message" // {message} from a session's changes between two snapshots
	GenerateBranchName    = "branch-name"    // {name}, a valid git ref, from the same changes
)

// GenerateRequest asks a worker for a JSON document from an engine. Either
// Generator names a built-in generator (commit-message and branch-name
// describe what session SessionID changed: the workspace of snapshot To
// against snapshot From, both of the caller's tenant and resolved by the
// gateway; skill, subagent and instruction draft an artifact from Input,
// the purpose) or Schema and Prompt are given. Model and
// Provider are preferences the engine's catalog has the last word on.
type GenerateRequest struct {
	Caller
	Engine    EngineType      `json:"engine"`
	Model     string          `json:"model,omitempty"`
	Provider  string          `json:"provider,omitempty"`
	AccountID string          `json:"accountId,omitempty"`
	ProjectID string          `json:"projectId,omitempty"`
	Generator string          `json:"generator,omitempty"`
	Input     string          `json:"input,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"` // a JSON schema object
	Prompt    string          `json:"prompt,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	From      string          `json:"fromSnapshot,omitempty"` // "" is an empty workspace
	To        string          `json:"toSnapshot,omitempty"`
}

// GenerateReply is the generated document and the model, provider and
// account that produced it.
type GenerateReply struct {
	Output    json.RawMessage `json:"output"`
	Model     string          `json:"model"`
	Provider  string          `json:"provider,omitempty"`
	AccountID string          `json:"accountId,omitempty"`
}
