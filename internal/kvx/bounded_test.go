package kvx_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/kvx"
)

// A full BoundedMap forgets one key per new key and never grows past its
// bound; updating a held key forgets nothing.
func TestBoundedMap(t *testing.T) {
	m := kvx.NewBoundedMap[int](3)
	for i := range 3 {
		m.Put(fmt.Sprint(i), i)
	}
	m.Put("1", 10)
	require.Equal(t, 3, m.Len())
	v, ok := m.Get("1")
	require.True(t, ok)
	require.Equal(t, 10, v)
	m.Put("new", 4)
	require.Equal(t, 3, m.Len())
	v, ok = m.Get("new")
	require.True(t, ok)
	require.Equal(t, 4, v)
	m.Delete("new")
	_, ok = m.Get("new")
	require.False(t, ok)
	require.Equal(t, 2, m.Len())
}

func TestCheckReplicas(t *testing.T) {
	for in, want := range map[int]int{0: 1, 1: 1, 3: 3, 5: 5} {
		got, err := kvx.CheckReplicas(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []int{-1, 6, 7} {
		_, err := kvx.CheckReplicas(in)
		require.Error(t, err, in)
	}
}
