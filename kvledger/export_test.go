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

// SetRecordFeedLimit sets how many changes a record watcher may fall
// behind before it is caught up, until the test ends.
func SetRecordFeedLimit(t interface{ Cleanup(func()) }, n int) {
	old := recordFeedLimit
	recordFeedLimit = n
	t.Cleanup(func() { recordFeedLimit = old })
}

// RecordWatchers returns how many watchers share s's record watch.
func RecordWatchers(s *KVStore) int { return s.records.Feeds() }
