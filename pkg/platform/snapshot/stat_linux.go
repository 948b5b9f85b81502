//go:build linux

package snapshot

import (
	"io/fs"
	"syscall"
)

// inodeCtime returns info's inode and change time, which change when a file
// is replaced or its metadata touched even if size and mtime are kept.
func inodeCtime(info fs.FileInfo) (uint64, int64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Ino), st.Ctim.Sec*1e9 + st.Ctim.Nsec
}
