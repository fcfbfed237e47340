//go:build !unix

package embedded

import "os"

// tryLock is a no-op where flock is not available: the data directory is
// then not protected against a second server.
func tryLock(*os.File) error { return nil }
