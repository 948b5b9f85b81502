// Package chatcmd is the core of `clopen chat`: a terminal chat with one
// session over the gateway's WebSocket. It reads prompts (and answers to the
// agent's questions) line by line from an io.Reader, writes the
// conversation as it streams to an io.Writer, and turns interrupts (Ctrl-C)
// into interrupt, cancel or exit. The gateway client is injected, so the
// whole loop runs in tests without a terminal.
package chatcmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Options are the flags of `clopen chat`.
type Options struct {
	Project string // project id or name; default the first project
	Session string // session id; default the project's most recent session
	New     bool   // start a new session
	Engine  string // engine of a new session; sent with every prompt when Pin is set
	Model   string // model of a new session; sent with every prompt when Pin is set
	Pin     bool   // the engine or model was given explicitly: use it for every prompt
}

// API is the REST part of the gateway chat uses; *client.Client has it.
type API interface {
	Projects(ctx context.Context) ([]api.Project, error)
	Sessions(ctx context.Context, project string, limit int) ([]events.Session, error)
	CreateSession(ctx context.Context, project string, in api.CreateSession) (events.Session, error)
}

// Conn is the live part; *client.Conn has it.
type Conn interface {
	Join(ctx context.Context, session string, cursor *uint64) (api.Joined, error)
	Send(ctx context.Context, session string, m api.SendMessage) (events.StartTurnReply, error)
	Cancel(ctx context.Context, session, run string) (json.RawMessage, error)
	Interrupt(ctx context.Context, session, run string) (json.RawMessage, error)
	Answer(ctx context.Context, session string, a api.Answer) (json.RawMessage, error)
	Frames() <-chan events.ServerFrame
	Close() error
}

// Dialer opens a live connection.
type Dialer func(ctx context.Context) (Conn, error)

// cancelWindow is how soon a second interrupt must follow the first to
// cancel the run instead.
const cancelWindow = 2 * time.Second

// maxRedials bounds reconnection attempts in a row.
const maxRedials = 3

// chat is one terminal session's state; only Run's goroutine touches it.
type chat struct {
	api     API
	dial    Dialer
	opts    Options
	out     *screen
	conn    Conn
	session events.Session
	project api.Project

	cursor        uint64          // last CHAT cursor shown
	runs          map[string]bool // runs of this session still going
	tools         map[string]events.ToolUseBlock
	shown         map[string]bool // message rows already shown
	inputDone     bool            // stdin ended: leave once no turn is running
	streamed      bool            // text streamed since the last saved message
	lastInterrupt time.Time
	ask           *asking // a question or permission prompt being answered
	now           func() time.Time
}

// Run chats until the input ends, the user types /quit, or an interrupt
// arrives at the prompt. Each value on interrupts is one Ctrl-C.
func Run(ctx context.Context, a API, dial Dialer, opts Options, in io.Reader, out io.Writer, interrupts <-chan struct{}) error {
	return newChat(a, dial, opts, out, time.Now).run(ctx, in, interrupts)
}

// newChat is a chat reading the time from now.
func newChat(a API, dial Dialer, opts Options, out io.Writer, now func() time.Time) *chat {
	return &chat{api: a, dial: dial, opts: opts, out: &screen{w: out}, runs: map[string]bool{},
		tools: map[string]events.ToolUseBlock{}, shown: map[string]bool{}, now: now}
}

func (c *chat) run(ctx context.Context, in io.Reader, interrupts <-chan struct{}) error {
	if err := c.pickSession(ctx); err != nil {
		return err
	}
	if err := c.connect(ctx, false); err != nil {
		return err
	}
	defer func() { _ = c.conn.Close() }()
	c.out.linef("session %q (%s) in project %s; type a prompt, /quit to leave, Ctrl-C to interrupt", c.session.Title, c.session.ID, c.project.Name)

	// The line reader may stay blocked on a terminal after Run returns; a
	// process exits then anyway. With a pipe or file it ends at EOF.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	c.prompt()
	redials := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case line, ok := <-lines:
			if !ok {
				// Input ended (a pipe or file): let a running turn finish first.
				if !c.busy() {
					c.out.endLine()
					return nil
				}
				c.inputDone, lines = true, nil
				continue
			}
			quit, err := c.onLine(ctx, line)
			if err != nil {
				c.out.linef("error: %v", err)
				if c.ask != nil {
					c.askNext()
				} else {
					c.prompt()
				}
			}
			if quit {
				return nil
			}
		case <-interrupts:
			if c.onInterrupt(ctx) {
				c.out.endLine()
				return nil
			}
		case f, ok := <-c.conn.Frames():
			if ok && f.Type != events.WSFrameBye {
				redials = 0
				c.onFrame(f)
				if c.inputDone && !c.busy() {
					c.out.endLine()
					return nil
				}
				continue
			}
			reason := "connection lost"
			if ok {
				reason = f.Reason
			}
			if redials++; redials > maxRedials {
				return fmt.Errorf("connection to the gateway lost (%s)", reason)
			}
			c.out.linef("[%s; reconnecting]", reason)
			_ = c.conn.Close()
			if err := c.connect(ctx, true); err != nil {
				return err
			}
		}
	}
}

// pickSession resolves the project and session the options name.
func (c *chat) pickSession(ctx context.Context) error {
	projects, err := c.api.Projects(ctx)
	if err != nil {
		return fmt.Errorf("list projects: %w", err)
	}
	for _, p := range projects {
		if c.opts.Project == "" || p.ID == c.opts.Project || p.Name == c.opts.Project {
			c.project = p
			break
		}
	}
	switch {
	case c.project.ID == "" && c.opts.Project != "":
		return fmt.Errorf("no project %q (clopen chat lists the projects your key may use)", c.opts.Project)
	case c.project.ID == "":
		return errors.New("your key may use no project: ask an admin to add you to one")
	}
	if !c.opts.New {
		sessions, err := c.api.Sessions(ctx, c.project.ID, 50)
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
		for _, s := range sessions { // newest first
			if c.opts.Session == "" || s.ID == c.opts.Session {
				c.session = s
				return nil
			}
		}
		if c.opts.Session != "" {
			return fmt.Errorf("no session %q in project %s", c.opts.Session, c.project.Name)
		}
	}
	c.session, err = c.api.CreateSession(ctx, c.project.ID, api.CreateSession{Title: "clopen chat",
		Engine: events.EngineType(c.opts.Engine), Model: c.opts.Model})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// connect dials and joins, from the last cursor when resuming.
func (c *chat) connect(ctx context.Context, resume bool) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	var cursor *uint64
	if resume && c.cursor > 0 {
		cursor = &c.cursor
	}
	if _, err := conn.Join(ctx, c.session.ID, cursor); err != nil {
		_ = conn.Close()
		return fmt.Errorf("join session %s: %w", c.session.ID, err)
	}
	c.conn = conn
	return nil
}

// busy reports whether a turn of ours is running or waiting.
func (c *chat) busy() bool { return len(c.runs) > 0 || c.ask != nil }

func (c *chat) prompt() {
	if !c.busy() {
		c.out.promptf("> ")
	}
}

// onLine handles one typed line: an answer when a question is open, else a
// prompt or a command.
func (c *chat) onLine(ctx context.Context, line string) (quit bool, err error) {
	if c.ask != nil {
		return false, c.answerLine(ctx, line)
	}
	switch line {
	case "":
		c.prompt()
		return false, nil
	case "/quit", "/exit":
		return true, nil
	}
	m := api.SendMessage{Text: line}
	if c.opts.Pin {
		m.Engine, m.Model = events.EngineType(c.opts.Engine), c.opts.Model
	}
	r, err := c.conn.Send(ctx, c.session.ID, m)
	if err != nil {
		return false, err
	}
	c.runs[r.RunID] = true
	c.lastInterrupt = time.Time{} // a Ctrl-C for an earlier turn does not cancel this one
	if r.Queued {
		c.out.linef("[queued behind the running turn]")
	}
	return false, nil
}

// onInterrupt handles one Ctrl-C and reports whether to leave. During a
// turn the first interrupts it and a second within cancelWindow cancels it.
// At the prompt it leaves, except within cancelWindow of an interrupt: that
// Ctrl-C was meant for a turn which has stopped meanwhile, so it only says
// so, and the next one leaves.
func (c *chat) onInterrupt(ctx context.Context) (leave bool) {
	now := c.now()
	second := !c.lastInterrupt.IsZero() && now.Sub(c.lastInterrupt) < cancelWindow
	c.lastInterrupt = time.Time{}
	var err error
	switch {
	case !c.busy() && second:
		c.out.linef("[the turn had already stopped; Ctrl-C again to leave]")
		c.prompt()
		return false
	case !c.busy():
		return true
	case second:
		c.out.linef("[cancelling]")
		_, err = c.conn.Cancel(ctx, c.session.ID, "")
	default:
		c.out.linef("[interrupting; Ctrl-C again within 2s to cancel]")
		_, err = c.conn.Interrupt(ctx, c.session.ID, "")
		c.lastInterrupt = now
	}
	if err != nil {
		c.out.linef("error: %v", err)
	}
	return false
}
