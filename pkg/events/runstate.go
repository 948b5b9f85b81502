package events

// RunState is Clopen's extension of the original EngineOutput union: a
// transition of the run's state machine, {"type":"run_state","state",
// "reason","error","errorKind","toolUseId","artifactRevision",
// "reasoningEffort","meteredUsage","snapshot"} with the last eight omitted
// when empty (reasoningEffort, meteredUsage and snapshot: when nil). ToolUseID names the parked question or permission prompt of an
// awaiting_input state: the id a client answers. ArtifactRevision, on the
// running transition, is the tenant's artifact revision whose content the
// worker applied before starting the engine. The
// worker and the stream manager publish it on the run's event stream like any
// other output, so that every transition (cancelling, then cancelled) reaches
// the stream manager, the event log and, as chat:run-state, the clients.
type RunState struct {
	State     RunStateName
	Reason    string    // why, in a word or two: "user", "session-deleted", "lease-expired"
	Error     string    // a failure's message, for failed and lost
	ErrorKind ErrorKind // a failure's class, for failed and lost
	ToolUseID string    // awaiting_input: the tool call waiting for the user
	// ArtifactRevision is the artifacts revision the run was configured from
	// (running only; 0 = not reported).
	ArtifactRevision int64
	// ReasoningEffort is the effort the engine was started with, after the
	// worker clamped the requested one to the model (running only): nil when
	// not reported, "" when the model has no effort knob. Messages of the
	// run are stamped with it.
	ReasoningEffort *string
	// MeteredUsage is, on the terminal transition the worker publishes, the
	// tokens the model proxy counted from the provider's responses to the
	// run's chat while the run ran (independent of what the agent reports
	// in its result): nil when the run's agent did not go through the
	// proxy (unconfined, or a model server it reached by itself).
	MeteredUsage *TokenUsage
	// Snapshot is, on the terminal transition the worker publishes, the
	// state the turn left (see RunSnapshot): nil when the worker took none.
	Snapshot *RunSnapshot
}

// RunStateName is a state of a run. The vocabulary is append-only.
type RunStateName string

// The run states. A run goes queued → claimed → running, may wait in
// awaiting_input, passes through cancelling when asked to stop, and ends in
// exactly one terminal state.
const (
	RunQueued        RunStateName = "queued"
	RunClaimed       RunStateName = "claimed"
	RunRunning       RunStateName = "running"
	RunAwaitingInput RunStateName = "awaiting_input"
	RunCancelling    RunStateName = "cancelling"
	RunCompleted     RunStateName = "completed"
	RunFailed        RunStateName = "failed"
	RunCancelled     RunStateName = "cancelled"
	RunLost          RunStateName = "lost" // the owning worker vanished without a terminal event
)

var runStates = []RunStateName{
	RunQueued, RunClaimed, RunRunning, RunAwaitingInput, RunCancelling,
	RunCompleted, RunFailed, RunCancelled, RunLost,
}

// RunStates returns every run state, in lifecycle order. The slice is a copy.
func RunStates() []RunStateName { return append([]RunStateName(nil), runStates...) }

// Valid reports whether s is one of the run states.
func (s RunStateName) Valid() bool { return oneOf(s, runStates) }

// Terminal reports whether s ends the run: completed, failed, cancelled or
// lost.
func (s RunStateName) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled || s == RunLost
}

// OutputType implements Output.
func (RunState) OutputType() string { return TypeRunState }

func (RunState) sessionID() string { return "" }

// MarshalJSON implements json.Marshaler.
func (r RunState) MarshalJSON() ([]byte, error) {
	if err := firstErr(checkEnum("state", r.State, true), checkEnum("errorKind", r.ErrorKind, false)); err != nil {
		return nil, encodeErr(TypeRunState, err)
	}
	return marshal(struct {
		Type      string       `json:"type"`
		State     RunStateName `json:"state"`
		Reason    string       `json:"reason,omitempty"`
		Error     string       `json:"error,omitempty"`
		ErrorKind ErrorKind    `json:"errorKind,omitempty"`
		ToolUseID string       `json:"toolUseId,omitempty"`
		Revision  int64        `json:"artifactRevision,omitempty"`
		Effort    *string      `json:"reasoningEffort,omitempty"`
		Metered   *TokenUsage  `json:"meteredUsage,omitempty"`
		Snapshot  *RunSnapshot `json:"snapshot,omitempty"`
	}{TypeRunState, r.State, r.Reason, r.Error, r.ErrorKind, r.ToolUseID, r.ArtifactRevision, r.ReasoningEffort, r.MeteredUsage, r.Snapshot})
}

// UnmarshalJSON decodes a run_state strictly, as DecodeOutput does.
func (r *RunState) UnmarshalJSON(data []byte) error { return unmarshalOutput(data, r) }

func decodeRunState(d *dec) Output {
	var effort *string
	if d.get("reasoningEffort") != nil {
		e := d.str("reasoningEffort")
		effort = &e
	}
	return RunState{
		ReasoningEffort:  effort,
		State:            readEnum[RunStateName](d, "state", true),
		Reason:           d.str("reason"),
		Error:            d.str("error"),
		ErrorKind:        readEnum[ErrorKind](d, "errorKind", false),
		ToolUseID:        d.str("toolUseId"),
		ArtifactRevision: d.int64("artifactRevision"),
		MeteredUsage:     decodeUsage(d, "meteredUsage"),
		Snapshot:         decodeSnapshot(d, "snapshot"),
	}
}
