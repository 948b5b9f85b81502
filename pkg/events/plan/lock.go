package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// fileLocks serialises writers of one file inside this process; flock on a
// lock file beside it serialises processes sharing the directory.
var fileLocks sync.Map // absolute path -> *sync.Mutex

// lockFile locks file for a read-modify-write and returns the unlock.
func lockFile(file string) (func(), error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	mu, _ := fileLocks.LoadOrStore(abs, &sync.Mutex{})
	m := mu.(*sync.Mutex)
	m.Lock()
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		m.Unlock()
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, "."+filepath.Base(abs)+".clopen-lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		m.Unlock()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		_ = lf.Close()
		m.Unlock()
		return nil, fmt.Errorf("lock %s: %w", abs, err)
	}
	return func() {
		_ = syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
		_ = lf.Close()
		m.Unlock()
	}, nil
}
