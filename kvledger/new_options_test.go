package kvledger_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// A nil Option is no option: a caller of the older New(store, nil), whose
// second argument was the event bus, still compiles and gets a Ledger
// rather than a panic, and so does WithObserver of no observers.
func TestNewIgnoresANilOption(t *testing.T) {
	l, err := kvledger.New(nil, nil)
	require.NoError(t, err)
	require.NotNil(t, l.Store())
	_, err = kvledger.New(nil, kvledger.WithObserver(kvledger.Observers()))
	require.NoError(t, err)
}

// WithSource names a ledger whose store has no name of its own; a store's
// own name (its events' source, its claims' lease prefix) is not
// overwritten: another name is refused, the same one accepted.
func TestWithSourceKeepsTheStoresName(t *testing.T) {
	store := kvledger.NewMemStore()
	_, err := kvledger.New(store, kvledger.WithSource("other"))
	require.ErrorIs(t, err, kvledger.ErrInvalidConfig)
	require.ErrorContains(t, err, store.Name())
	_, err = kvledger.New(store, kvledger.WithSource(store.Name()))
	require.NoError(t, err)
}
