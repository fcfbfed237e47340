//go:build unix

package embedded

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive, non-blocking flock. flock locks belong to
// the open file, so a second open of the same file fails to lock it also
// within one process.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
