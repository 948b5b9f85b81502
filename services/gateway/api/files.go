package api

// Files is a page of a session's workspace files, in path order.
type Files struct {
	Files []File `json:"files"`
	// NextCursor, when set, is the cursor of the next page.
	NextCursor string `json:"nextCursor,omitempty" doc:"Pass as cursor for the next page; absent on the last page."`
}

// File is one entry of a workspace: a regular file, a symlink or an empty
// directory.
type File struct {
	Path   string `json:"path" doc:"Slash-separated, relative to the workspace."`
	Type   string `json:"type" doc:"file, symlink or dir (an empty directory)."`
	Mode   string `json:"mode" doc:"Permission bits in octal, such as 0644."`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty" doc:"The content's sha256, of a regular file."`
	Link   string `json:"link,omitempty" doc:"A symlink's target."`
}

// Diff is what changed in a session's workspace between two snapshots.
type Diff struct {
	From    string       `json:"from,omitempty" doc:"The snapshot compared from; absent: an empty workspace."`
	To      string       `json:"to,omitempty" doc:"The snapshot compared to; absent: an empty workspace."`
	Changes []FileChange `json:"changes"`
	Patch   string       `json:"patch" doc:"Unified diff of the text files; binary and large files are named on a line of their own."`
	// Truncated says the patch was cut at a file boundary.
	Truncated bool `json:"truncated" doc:"The patch was cut at a file boundary; the changes list is still whole."`
}

// FileChange is one path that differs.
type FileChange struct {
	Path         string `json:"path"`
	Kind         string `json:"kind" doc:"added, changed or deleted."`
	LinesAdded   int    `json:"linesAdded"`
	LinesRemoved int    `json:"linesRemoved"`
	Binary       bool   `json:"binary" doc:"The file holds a NUL byte: no line counts."`
}
