package kvledger

import (
	"context"
	"fmt"

	"github.com/natscoord/natscoord/internal/kvx"
)

// migrate brings a bucket created by the layout before events came from
// the bucket's own stream (History 1, no live feed) to the current one in
// place: one stream update raising History to EventHistory and adding the
// RePublish (the server allows both on a live stream; the writes already
// stored stay as they are). A caller without the right to update the
// stream gets ErrOldLayout naming the command that does it.
func (s *KVStore) migrate(ctx context.Context) error {
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	l, err := s.b.Layout(octx)
	if err != nil {
		return fmt.Errorf("kvledger: %w", err)
	}
	want := rePublish(s.b.Name())
	if l.History >= EventHistory && l.RePublish != nil && *l.RePublish == *want {
		return nil
	}
	if err := s.b.SetLayout(octx, kvx.Layout{History: max(l.History, EventHistory), RePublish: want}); err != nil {
		return fmt.Errorf("%w: bucket %q keeps %d writes per key and republishes %v; events need %d and %s -> %s. "+
			"Run `natscoord ledger migrate --bucket %s` with the right to update stream %s: %w",
			ErrOldLayout, s.b.Name(), l.History, l.RePublish, EventHistory, want.Source, want.Destination, s.b.Name(), s.b.Stream(), err)
	}
	return nil
}
