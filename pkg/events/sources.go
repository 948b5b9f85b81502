package events

// A project's git source is cloned, and a session's branch pushed, by an
// engine worker: svc.engine.source.<op>, served by every worker in the
// engine workers' queue group whatever engines it has. The worker resolves
// the project's credential itself (artifacts' sources.credential.resolve,
// with the caller's token), so the secret never passes the gateway.

// SourceEngine is the subject token of the source ops; it is no engine type.
const SourceEngine = "source"

// Source ops, under svc.engine.source.<op>.
const (
	OpSourceClone = "clone"
	OpSourcePush  = "push"
)

// SourceSubject is svc.engine.source.<op>.
func SourceSubject(op string) (string, error) { return join("svc", EngineService, SourceEngine, op) }

// CloneRequest asks a worker to clone a project's repository and capture
// it as a snapshot of the caller's tenant.
type CloneRequest struct {
	Caller
	ProjectID string `json:"projectId"`
	URL       string `json:"url"`
	Branch    string `json:"branch,omitempty"` // empty: the remote's default
}

// CloneReply is the snapshot made of the clone (its workspace tree) and
// what was checked out.
type CloneReply struct {
	Snapshot string `json:"snapshot"`
	Commit   string `json:"commit"`
	Branch   string `json:"branch"`
}

// PushRequest asks a worker to push the workspace files of Snapshot (a
// session's HEAD) to Branch of the project's repository: a fresh clone of
// BaseBranch with the files laid over it, committed as Author.
type PushRequest struct {
	Caller
	ProjectID   string `json:"projectId"`
	URL         string `json:"url"`
	BaseBranch  string `json:"baseBranch,omitempty"`
	Snapshot    string `json:"snapshot"`
	Branch      string `json:"branch"`
	Message     string `json:"message"`
	AuthorName  string `json:"authorName"`
	AuthorEmail string `json:"authorEmail"`
}

// PushReply is what was committed and pushed, and the remote's answer.
type PushReply struct {
	Commit string `json:"commit"`
	Branch string `json:"branch"`
	Remote string `json:"remote,omitempty"`
}
