package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/services/mcp-bridge/internal/binding"
)

// Limits of the internal tools' inputs.
const (
	maxNoteName    = 200
	maxNoteContent = 64 << 10
	maxSearchHits  = 20
	maxNotifyText  = 4 << 10
	// notifyTimeout bounds the worker's answer to a notification.
	notifyTimeout = 10 * time.Second
)

// tools serves Clopen's own MCP tools. Each takes the calling run from its
// context (binding.From), put there by authenticate, and from nowhere else.
type tools struct {
	db *pgxpool.Pool
	nc *nats.Conn
	// askTimeout is how long ask_user waits for the user's answer.
	askTimeout time.Duration
}

// server returns the MCP server of the internal tools, with ask_user
// named askName (events.MCPAskToolName).
func (t *tools) server(askName string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "clopen", Version: "0.1.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: askName, Description: "Ask the user one or more questions and wait for the answers. " +
		"Each question has a short header and two to four options; the user picks one (or several with multiSelect) or writes their own."}, t.askUser)
	mcp.AddTool(s, &mcp.Tool{Name: "notify", Description: "Send a short notification to the members of this chat session."}, t.notify)
	mcp.AddTool(s, &mcp.Tool{Name: "memory_write", Description: "Save a named note in this project's memory, replacing a note of the same name. " +
		"Notes outlive the session: later sessions of the project can read them."}, t.memoryWrite)
	mcp.AddTool(s, &mcp.Tool{Name: "memory_read", Description: "Read a note of this project's memory by its name."}, t.memoryRead)
	mcp.AddTool(s, &mcp.Tool{Name: "memory_search", Description: "Find notes of this project's memory whose name or content contains the query (all notes when it is empty)."}, t.memorySearch)
	return s
}

// runOf is the calling run; a context without one is refused.
func runOf(ctx context.Context) (binding.Run, error) {
	r, ok := binding.From(ctx)
	if !ok {
		return binding.Run{}, errors.New("this call is bound to no run")
	}
	return r, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// askInput is ask_user's input: AskUserQuestion's questions.
type askInput struct {
	Questions []events.Question `json:"questions" jsonschema:"the questions, one to four"`
}

func (t *tools) askUser(ctx context.Context, _ *mcp.CallToolRequest, in askInput) (*mcp.CallToolResult, any, error) {
	run, err := runOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(in.Questions) == 0 || len(in.Questions) > 4 {
		return nil, nil, errors.New("ask_user needs one to four questions")
	}
	for i, q := range in.Questions {
		if strings.TrimSpace(q.Question) == "" {
			return nil, nil, fmt.Errorf("question %d has no text", i+1)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, t.askTimeout)
	defer cancel()
	reply, err := t.toWorker(ctx, run, events.VerbAsk, events.RunToolRequest{Questions: in.Questions})
	if err != nil {
		return nil, nil, err
	}
	b, _ := json.Marshal(reply.Answers)
	return text("The user answered: " + string(b)), nil, nil
}

type notifyInput struct {
	Title   string `json:"title" jsonschema:"a short title"`
	Message string `json:"message,omitempty" jsonschema:"the details"`
	Level   string `json:"level,omitempty" jsonschema:"info (the default), warning or error"`
}

func (t *tools) notify(ctx context.Context, _ *mcp.CallToolRequest, in notifyInput) (*mcp.CallToolResult, any, error) {
	run, err := runOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	level := events.NotificationLevel(in.Level)
	switch level {
	case "":
		level = events.LevelInfo
	case events.LevelInfo, events.LevelWarning, events.LevelError:
	default:
		return nil, nil, fmt.Errorf("level %q: want info, warning or error", in.Level)
	}
	if strings.TrimSpace(in.Title) == "" || len(in.Title)+len(in.Message) > maxNotifyText {
		return nil, nil, fmt.Errorf("a notification needs a title, and title and message within %d bytes", maxNotifyText)
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	if _, err := t.toWorker(ctx, run, events.VerbNotify, events.RunToolRequest{Level: level, Title: in.Title, Message: in.Message}); err != nil {
		return nil, nil, err
	}
	return text("Notified."), nil, nil
}

// toWorker asks the worker that runs run (the only one subscribed to its
// control subject) to serve verb, and returns its reply.
func (t *tools) toWorker(ctx context.Context, run binding.Run, verb string, req events.RunToolRequest) (events.RunToolReply, error) {
	subject, err := events.ControlSubject(run.RunID, verb)
	if err != nil {
		return events.RunToolReply{}, err
	}
	req.Tenant, req.RunID = run.TenantID, run.RunID
	body, _ := json.Marshal(req)
	msg, err := t.nc.RequestWithContext(ctx, subject, body)
	if errors.Is(err, nats.ErrNoResponders) {
		return events.RunToolReply{}, errRunEnded
	}
	if err != nil {
		return events.RunToolReply{}, fmt.Errorf("the run's worker did not answer: %w", err)
	}
	var reply events.RunToolReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return events.RunToolReply{}, fmt.Errorf("the run's worker answered: %w", err)
	}
	if reply.Error != "" {
		return events.RunToolReply{}, errors.New(reply.Error)
	}
	return reply, nil
}

type noteInput struct {
	Name    string `json:"name" jsonschema:"the note's name"`
	Content string `json:"content" jsonschema:"the note's text"`
}

func (t *tools) memoryWrite(ctx context.Context, _ *mcp.CallToolRequest, in noteInput) (*mcp.CallToolResult, any, error) {
	run, err := runOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > maxNoteName || len(in.Content) > maxNoteContent {
		return nil, nil, fmt.Errorf("a note needs a name of at most %d bytes and content of at most %d", maxNoteName, maxNoteContent)
	}
	_, err = t.db.Exec(ctx, `INSERT INTO mcpbridge.memory (tenant_id, project_id, name, content, run_id)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (tenant_id, project_id, name) DO UPDATE SET content = $4, run_id = $5, updated_at = now()`,
		run.TenantID, run.ProjectID, name, in.Content, run.RunID)
	if err != nil {
		return nil, nil, fmt.Errorf("save the note: %w", err)
	}
	return text("Saved note " + name + "."), nil, nil
}

type nameInput struct {
	Name string `json:"name" jsonschema:"the note's name"`
}

func (t *tools) memoryRead(ctx context.Context, _ *mcp.CallToolRequest, in nameInput) (*mcp.CallToolResult, any, error) {
	run, err := runOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	var content string
	err = t.db.QueryRow(ctx, `SELECT content FROM mcpbridge.memory WHERE tenant_id = $1 AND project_id = $2 AND name = $3`,
		run.TenantID, run.ProjectID, strings.TrimSpace(in.Name)).Scan(&content)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, fmt.Errorf("this project has no note named %q", in.Name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the note: %w", err)
	}
	return text(content), nil, nil
}

type searchInput struct {
	Query string `json:"query" jsonschema:"text the note's name or content contains"`
}

func (t *tools) memorySearch(ctx context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, any, error) {
	run, err := runOf(ctx)
	if err != nil {
		return nil, nil, err
	}
	pattern := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(in.Query) + "%"
	rows, err := t.db.Query(ctx, `SELECT name, content FROM mcpbridge.memory
		WHERE tenant_id = $1 AND project_id = $2 AND (name ILIKE $3 OR content ILIKE $3)
		ORDER BY updated_at DESC LIMIT $4`, run.TenantID, run.ProjectID, pattern, maxSearchHits)
	if err != nil {
		return nil, nil, fmt.Errorf("search the notes: %w", err)
	}
	type note struct {
		Name    string `json:"name"`
		Content string `json:"content"`
	}
	notes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[note])
	if err != nil {
		return nil, nil, fmt.Errorf("search the notes: %w", err)
	}
	if len(notes) == 0 {
		return text("No note matches."), nil, nil
	}
	b, _ := json.Marshal(notes)
	return text(string(b)), nil, nil
}
