package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// EditJSONL rewrites the JSON-lines file at path, giving edit each line
// that holds a JSON object (its index and its fields, which edit may
// change in place, reporting whether it did). Lines that are not objects
// are kept as they are. The file is replaced only when a line changed,
// with its mode and owner kept: a session file stays the confined
// agent's, whose uid owns it.
func EditJSONL(path string, edit func(i int, rec map[string]json.RawMessage) bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	changed := false
	for i, line := range lines {
		body := bytes.TrimRight(line, "\r\n")
		var rec map[string]json.RawMessage
		if json.Unmarshal(body, &rec) != nil || rec == nil || !edit(i, rec) {
			continue
		}
		out, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		lines[i] = append(out, line[len(body):]...)
		changed = true
	}
	if !changed {
		return nil
	}
	return replaceFile(path, bytes.Join(lines, nil))
}

// EditJSON rewrites the file at path holding one JSON object, giving edit
// its fields, which edit may change in place, reporting whether it did;
// the file is replaced as EditJSONL replaces one. A file that is not a
// JSON object is an error.
func EditJSON(path string, edit func(rec map[string]json.RawMessage) bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rec map[string]json.RawMessage
	if err := json.Unmarshal(data, &rec); err != nil || rec == nil {
		return fmt.Errorf("%s does not hold a JSON object", path)
	}
	if !edit(rec) {
		return nil
	}
	out, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return replaceFile(path, out)
}

// replaceFile replaces the file at path with data, keeping its mode and
// owner: a session file stays the confined agent's, whose uid owns it.
// The new content goes to a fresh file beside it, renamed over it, so a
// link the agent left in its place is replaced, never written through.
func replaceFile(path string, data []byte) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 && err == nil {
		err = os.Lchown(tmp.Name(), int(st.Uid), int(st.Gid))
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// SetString sets rec's string field key to value, reporting whether that
// changed it; a record without the field is left alone unless always.
func SetString(rec map[string]json.RawMessage, key, value string, always bool) bool {
	raw, ok := rec[key]
	if !ok && !always {
		return false
	}
	var cur string
	if ok && json.Unmarshal(raw, &cur) == nil && cur == value {
		return false
	}
	rec[key], _ = json.Marshal(value)
	return true
}

// PlainName reports whether s can name a file in a directory and nothing
// else: not empty, no separator, not "." or "..". An engine session id
// comes from the agent's own output, so it is checked before it becomes
// part of a path the worker opens.
func PlainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}
