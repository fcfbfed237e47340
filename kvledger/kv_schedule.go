package kvledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/kvx"
)

// CreateSchedule stores sc when no schedule of its name is stored (one
// removed before may be created again), and returns it as stored (Rev
// set). A schedule of that name is ErrScheduleExists; sc is checked
// first (ErrInvalidSchedule). UpdatedAt defaults to the system clock now.
func (s *KVStore) CreateSchedule(ctx context.Context, sc Schedule) (Schedule, error) {
	return s.writeSchedule(ctx, sc, 0, true)
}

// PutSchedule stores sc: created when no schedule of its name exists,
// replaced (a compare-and-set on the revision it read) when replace is
// set, and ErrScheduleExists otherwise. A replacement that races with
// another writer reads and tries again, up to three times. It is what
// tasks.Client.Schedule and `natscoord ledger schedule add` do.
func (s *KVStore) PutSchedule(ctx context.Context, sc Schedule, replace bool) (Schedule, error) {
	if err := sc.Validate(); err != nil {
		return Schedule{}, err
	}
	if !replace {
		return s.CreateSchedule(ctx, sc)
	}
	var err error
	for range 3 {
		// A value that is not a schedule (ErrCorruptRecord) is never
		// overwritten.
		cur, found, lerr := s.LoadSchedule(ctx, sc.Name)
		if lerr != nil {
			return Schedule{}, lerr
		}
		var out Schedule
		if found {
			out, err = s.UpdateSchedule(ctx, sc, cur.Rev)
		} else {
			out, err = s.CreateSchedule(ctx, sc)
		}
		if !errors.Is(err, ErrScheduleChanged) && !errors.Is(err, ErrScheduleExists) {
			return out, err
		}
	}
	return Schedule{}, err
}

// UpdateSchedule replaces the schedule of sc.Name while its revision is
// rev (the Rev it was read with), and returns it as stored. A schedule
// changed or removed meanwhile is ErrScheduleChanged.
func (s *KVStore) UpdateSchedule(ctx context.Context, sc Schedule, rev uint64) (Schedule, error) {
	if rev == 0 {
		return Schedule{}, fmt.Errorf("%w: schedule %q: update needs the revision it was read at", ErrInvalidSchedule, sc.Name)
	}
	return s.writeSchedule(ctx, sc, rev, false)
}

func (s *KVStore) writeSchedule(ctx context.Context, sc Schedule, rev uint64, create bool) (Schedule, error) {
	if sc.UpdatedAt.IsZero() {
		sc.UpdatedAt = clock.Real().Now().UTC() // the caller gave no time: the system clock
	}
	value, err := encodeSchedule(sc)
	if err != nil {
		return Schedule{}, err
	}
	key := scheduleKey(sc.Name)
	if len(key) > s.b.MaxKeyBytes() {
		return Schedule{}, fmt.Errorf("%w: schedule %q: the key is %d bytes once escaped, the limit is %d", ErrInvalidSchedule, sc.Name, len(key), s.b.MaxKeyBytes())
	}
	if max := s.b.MaxValueBytes(); len(value) > max {
		return Schedule{}, fmt.Errorf("%w: schedule %q is %d bytes, the server takes %d", ErrTooLarge, sc.Name, len(value), max)
	}
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	var newRev uint64
	if create {
		newRev, _, err = s.b.Acquire(octx, key, value, 0, 0)
		if kvx.IsConflict(err) {
			return Schedule{}, fmt.Errorf("%w: %q", ErrScheduleExists, sc.Name)
		}
	} else {
		newRev, err = s.b.Update(octx, key, value, rev, 0)
		if kvx.IsConflict(err) {
			return Schedule{}, fmt.Errorf("%w: %q is no longer at revision %d", ErrScheduleChanged, sc.Name, rev)
		}
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("kvledger: write schedule %q: %w", sc.Name, closedErr(err))
	}
	sc.Rev = newRev
	return sc, nil
}

// DeleteSchedule removes the schedule name while its revision is rev.
// No schedule of that name is ErrNoSchedule; one changed meanwhile
// ErrScheduleChanged. Workers stop admitting its periods as their watch
// delivers the removal; tasks already admitted stay.
func (s *KVStore) DeleteSchedule(ctx context.Context, name string, rev uint64) error {
	if name == "" || rev == 0 {
		return fmt.Errorf("%w: delete needs a name and the revision it was read at", ErrInvalidSchedule)
	}
	octx, cancel := s.ops.Bound(ctx)
	defer cancel()
	_, err := s.b.Delete(octx, scheduleKey(name), rev)
	if kvx.IsConflict(err) {
		if _, found, lerr := s.LoadSchedule(ctx, name); lerr == nil && !found {
			return fmt.Errorf("%w: %q", ErrNoSchedule, name)
		}
		return fmt.Errorf("%w: %q is no longer at revision %d", ErrScheduleChanged, name, rev)
	}
	if err != nil {
		return fmt.Errorf("kvledger: delete schedule %q: %w", name, closedErr(err))
	}
	return nil
}

// RemoveSchedule removes the schedule name at the revision it reads
// first, and returns that revision: DeleteSchedule for a caller that
// holds no revision. It is what tasks.Client.Unschedule and `natscoord
// ledger schedule rm` without --rev do. No schedule of that name is
// ErrNoSchedule, one changed between the read and the delete
// ErrScheduleChanged. A stored value that is not a schedule is
// ErrCorruptRecord (naming its revision) and stays: it is removed only
// by DeleteSchedule at that revision, so nothing written after it was
// seen goes unseen.
func (s *KVStore) RemoveSchedule(ctx context.Context, name string) (uint64, error) {
	sc, found, err := s.LoadSchedule(ctx, name)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%w: %q", ErrNoSchedule, name)
	}
	return sc.Rev, s.DeleteSchedule(ctx, name, sc.Rev)
}

// LoadSchedule reads the schedule name from the stream leader. A stored
// value that is not a schedule is ErrCorruptRecord.
func (s *KVStore) LoadSchedule(ctx context.Context, name string) (Schedule, bool, error) {
	if name == "" {
		return Schedule{}, false, nil
	}
	octx, cancel := s.ops.Bound(ctx)
	e, err := s.b.Get(octx, scheduleKey(name))
	cancel()
	if errors.Is(err, kvx.ErrNotFound) {
		return Schedule{}, false, nil
	}
	if err != nil {
		return Schedule{}, false, fmt.Errorf("kvledger: load schedule %q: %w", name, err)
	}
	sc, _, err := decodeSchedule(name, e.Value, e.Revision)
	if err != nil {
		return Schedule{}, false, err
	}
	return sc, true, nil
}

// Schedules returns every stored schedule, by name. A stored value that
// is not a schedule does not hide the others: they are returned with an
// error matching ErrCorruptRecord that names it.
func (s *KVStore) Schedules(ctx context.Context) ([]Schedule, error) {
	return scanStored(ctx, s.b, schedPrefix, "schedules", func(e kvx.Entry) (Schedule, string, bool, error) {
		c := scheduleChangeOf(e)
		return c.Schedule, c.Name, true, c.Err
	})
}

// scanStored reads the latest value of every key under prefix (the
// schedules, the pauses), decoded by decode (ok false: none is stored
// under the key), sorted by the name decode returns. A value that does
// not decode does not hide the others: the others are returned with its
// error.
func scanStored[T any](ctx context.Context, b *kvx.Bucket, prefix, what string, decode func(kvx.Entry) (T, string, bool, error)) ([]T, error) {
	type named struct {
		v    T
		name string
	}
	var (
		found []named
		bad   []error
	)
	err := b.ScanLatest(ctx, prefix+">", 0, func(e kvx.Entry) bool {
		v, name, ok, err := decode(e)
		switch {
		case err != nil:
			bad = append(bad, err)
		case ok:
			found = append(found, named{v, name})
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("kvledger: list %s: %w", what, err)
	}
	slices.SortFunc(found, func(a, b named) int { return strings.Compare(a.name, b.name) })
	out := make([]T, len(found))
	for i, f := range found {
		out[i] = f.v
	}
	return out, errors.Join(bad...)
}
