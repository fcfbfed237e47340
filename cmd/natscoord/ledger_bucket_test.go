package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// On a fresh server `ledger ls` lists nothing, as lease ls and lock ls do,
// and creates nothing; a --bucket that does not exist is an error for ls,
// and admit refuses it (creating nothing) unless --create is given. The
// default bucket is created by the first admit.
func TestLedgerBucketMissing(t *testing.T) {
	c, n := newCLI(t)
	require.Equal(t, "KEY  STATUS  SEQ  OWNER  FENCE  NEEDS  BLOCKED-BY  REV\n", c.ok("ledger", "ls"))
	require.Equal(t, "[]\n", c.ok("--json", "ledger", "ls"))
	require.False(t, bucketExists(t, n, defaultLedgerBucket), "listing created nothing")
	require.Contains(t, c.fail("ledger", "--bucket", "nope", "ls"), `bucket "nope" does not exist`)

	msg := c.fail("ledger", "--bucket", "nope", "admit", "a", "--seq", "1")
	require.Contains(t, msg, `bucket "nope" does not exist`)
	require.Contains(t, msg, "--create")
	require.False(t, bucketExists(t, n, "nope"), "a refused admit created no bucket")

	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "a", "--seq", "1", "--create"), "a admitted")
	require.Contains(t, c.ok("ledger", "--bucket", "nope", "admit", "b", "--seq", "1"), "b admitted", "it exists now")
	require.Contains(t, c.ok("ledger", "admit", "a", "--seq", "1"), "a admitted", "the default bucket is created")
	require.Regexp(t, `(?m)^a\s+pending\s`, c.ok("ledger", "ls"))
}
