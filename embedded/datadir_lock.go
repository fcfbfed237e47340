package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrDataDirInUse means another running server (in this process or
// another) already uses the data directory. Two servers on one JetStream
// store would each believe they own its files and corrupt them; nats-server
// itself does not refuse it.
var ErrDataDirInUse = errors.New("embedded: data directory in use by another server")

// lockFileName is the file in a data directory whose exclusive lock marks
// the directory as used by a running server. The lock is the operating
// system's (flock): it ends with the process, so a crashed server leaves
// nothing to clean up.
const lockFileName = "natscoord.lock"

// dirLock is a held data-directory lock.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory's lock, creating the directory and
// the lock file when missing, or fails with ErrDataDirInUse.
func lockDataDir(dir string) (*dirLock, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded: data dir: %w", err)
	}
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: data dir lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %s (%v)", ErrDataDirInUse, dir, err)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "pid %d\n", os.Getpid())
	return &dirLock{f: f}, nil
}

// release drops the lock (closing the file drops it).
func (l *dirLock) release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
