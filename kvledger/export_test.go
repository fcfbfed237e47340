package kvledger

// SetAfterWriteHook installs a hook run between a successful write and
// its event publication; an error returned by the hook ends the operation
// right there, as if the process had died.
func SetAfterWriteHook(l *Ledger, fn func(key IdempotencyKey, rec TaskState) error) {
	l.afterWrite = fn
}

// TaskKey is the bucket key of k's record, for tests that look at the
// stored message itself (its headers).
func TaskKey(k IdempotencyKey) string { return taskKey(k) }
