package worker

import "github.com/natscoord/natscoord/internal/heapx"

// Fair groups (Config.FairKinds). A fair kind's ready queue is one heap
// per (priority, group) of the kind, a "sub", and a heap of the subs
// that hold ready tasks, by priority (highest first), then turn. A sub
// joins with the next turn (behind every sub already there: the end of
// the ring), and each pick from it gives it the next turn again, so
// within a priority the groups with ready tasks take turns (round robin),
// each group's own tasks in the order they became ready (placeBefore).
// Tasks without a group form one group of their own. Cost, for fair kinds
// only: a pick is O(log t) in its group's tasks plus O(log g) in the
// groups with ready tasks, against O(log n) in the kind's tasks, and one
// map lookup per filing; memory is one small heap per group with ready
// tasks, reused once it empties.
//
// A picked task carries its turn (readyItem.turn, kept in its entry while
// its record does not change): filed back unstarted (a full group, its
// last attempt, a claim that failed), it waits apart (held) and is taken
// again at that turn, before the groups whose turn comes after it, with
// no new turn for its group: it keeps its place, and its group's turn
// counts once. Its floor, the latest readiness among the kind's
// picks so far, makes readyBefore order picked tasks of a fair kind by
// their pick, as a claim ahead must take its handler slot
// (grantLocked), and the order stays total across kinds.
type fairQueue struct {
	subs  map[subKey]*sub
	turns *heapx.Heap[*sub]
	held  *heapx.Heap[readyItem]
	// ix holds the turn counter (ix.turns, shared by the fair kinds, so
	// a turn a task carries is never met again after its queue emptied)
	// and the entries that keep a picked task's turn; batch, while not 0,
	// is the turn given to every sub that joins with the backlog Start
	// files: they take turns by their first task.
	ix    *index
	batch uint64
	// last is the latest readiness among the picks (the next floor).
	last uint64
	free []*sub
}

type subKey struct {
	prio  int
	group string
}

type sub struct {
	key  subKey
	turn uint64
	at   int // position in turns
	h    *heapx.Heap[readyItem]
}

func newFairQueue(ix *index) *fairQueue {
	return &fairQueue{
		subs: make(map[subKey]*sub),
		turns: heapx.New(func(a, b *sub) bool {
			if a.key.prio != b.key.prio {
				return a.key.prio > b.key.prio
			}
			if a.turn != b.turn {
				return a.turn < b.turn
			}
			ha, _ := a.h.Peek()
			hb, _ := b.h.Peek()
			return placeBefore(ha, hb) // subs that joined in one batch
		}, func(s *sub, i int) { s.at = i }),
		held: heapx.New(func(a, b readyItem) bool {
			if a.prio != b.prio {
				return a.prio > b.prio
			}
			return a.turn < b.turn
		}, nil),
		ix: ix,
	}
}

// push files it under group; backlog says it is part of the backlog
// Start files (its group joins in one batch with the others).
func (q *fairQueue) push(it readyItem, group string, backlog bool) {
	if it.turn != 0 {
		q.held.Push(it)
		return
	}
	k := subKey{prio: it.prio, group: group}
	s := q.subs[k]
	if s == nil {
		s = q.newSub(k)
		switch {
		case !backlog:
			s.turn = q.next()
		case q.batch == 0:
			q.batch = q.next()
			fallthrough
		default:
			s.turn = q.batch
		}
		s.h.Push(it)
		q.subs[k] = s
		q.turns.Push(s)
		return
	}
	head, _ := s.h.Peek()
	s.h.Push(it)
	if placeBefore(it, head) {
		q.turns.Fix(s.at)
	}
}

func (q *fairQueue) next() uint64 {
	q.batch = 0
	q.ix.turns++
	return q.ix.turns
}

// pop takes the first task of the group whose turn it is, among the
// highest priority's, and passes the turn on; a held task at its turn
// goes first.
func (q *fairQueue) pop() (readyItem, bool) {
	s, ok := q.turns.Peek()
	if h, held := q.held.Peek(); held && (!ok || h.prio > s.key.prio || h.prio == s.key.prio && h.turn <= s.turn) {
		return q.held.Pop(), true
	}
	if !ok {
		return readyItem{}, false
	}
	it := s.h.Pop()
	it.turn = s.turn
	q.last = max(q.last, it.ready)
	it.floor = q.last
	if e := q.ix.recs[it.key]; e != nil {
		e.turn, e.floor = it.turn, it.floor
	}
	if s.h.Len() == 0 {
		q.turns.Pop()
		delete(q.subs, s.key)
		q.free = append(q.free, s)
	} else {
		s.turn = q.next()
		q.turns.Fix(s.at)
	}
	return it, true
}

func (q *fairQueue) newSub(k subKey) *sub {
	if n := len(q.free); n > 0 {
		s := q.free[n-1]
		q.free = q.free[:n-1]
		s.key = k
		return s
	}
	return &sub{key: k, h: heapx.New(placeBefore, nil)}
}
