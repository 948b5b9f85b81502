package events

// RunSnapshot is the state a turn left behind, on its terminal run_state:
// the id of the snapshot the worker captured of the session's workspace
// and its engine's native session files, what the capture stored, and the
// files the turn added, changed and deleted. A capture that failed has no
// id and says why in Error: the turn's result stands, its state was not
// saved, and the next turn starts from the previous snapshot.
type RunSnapshot struct {
	ID       string       `json:"id,omitempty" doc:"The snapshot of the session after this turn: its workspace and its engine's session files."`
	Files    int64        `json:"files" doc:"Files in the session's workspace after the turn."`
	Bytes    int64        `json:"bytes" doc:"Their total size in bytes."`
	Uploaded int64        `json:"uploaded" doc:"Bytes the capture stored; content an earlier snapshot holds is not stored again."`
	Changes  []FileChange `json:"changes" doc:"The workspace files the turn added, changed and deleted."`
	Error    string       `json:"error,omitempty" doc:"Why the session's state could not be saved; the turn's result is kept."`
}

// FileChange is one file a turn added, changed or deleted.
type FileChange struct {
	Path         string         `json:"path" doc:"Slash-separated, relative to the workspace."`
	Kind         FileChangeKind `json:"kind"`
	LinesAdded   int            `json:"linesAdded"`
	LinesRemoved int            `json:"linesRemoved"`
	Binary       bool           `json:"binary,omitempty" doc:"A binary file (or a text file too large to count): no line counts."`
}

// FileChangeKind says what a turn did to a file.
type FileChangeKind string

// The kinds of FileChange.
const (
	FileAdded   FileChangeKind = "added"
	FileChanged FileChangeKind = "changed"
	FileDeleted FileChangeKind = "deleted"
)

// FileChangeKinds returns every kind, in this order: added, changed, deleted.
func FileChangeKinds() []FileChangeKind { return []FileChangeKind{FileAdded, FileChanged, FileDeleted} }

func decodeSnapshot(d *dec, key string) *RunSnapshot {
	s, ok := d.optObj(key)
	if !ok {
		return nil
	}
	out := &RunSnapshot{ID: s.str("id"), Files: s.int64("files"), Bytes: s.int64("bytes"),
		Uploaded: s.int64("uploaded"), Error: s.str("error"), Changes: []FileChange{}}
	s.each("changes", func(c *dec) {
		fc := FileChange{Path: c.reqStr("path"), Kind: FileChangeKind(c.reqStr("kind")), LinesAdded: c.int("linesAdded"),
			LinesRemoved: c.int("linesRemoved"), Binary: c.boolean("binary")}
		switch fc.Kind {
		case FileAdded, FileChanged, FileDeleted:
		default:
			c.failf("kind", "unknown file change kind %q", fc.Kind)
		}
		out.Changes = append(out.Changes, fc)
	})
	return out
}
