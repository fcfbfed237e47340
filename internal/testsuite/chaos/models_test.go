package chaos

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Sequential models for porcupine. An operation whose outcome the client
// could not learn (a timeout, a lost connection) has output unknown and
// return time "infinity": the model lets it take effect at any point after
// its call, or never.

// lockIn/lockOut are the inputs and outputs of lease-as-lock operations.
type lockIn struct {
	Key     string // the lock's key (one partition per key)
	Acquire bool   // TryAcquire; otherwise Release of Fence
	Fence   uint64 // the fence being released
}

type lockOut struct {
	Unknown bool
	OK      bool   // acquired / released
	Fence   uint64 // fence of a successful acquire
}

// lockState is the lease key as the model sees it. Orphan marks a lease
// no client will release (its acquire or release had an unknown outcome):
// the server's TTL may expire it at any moment.
type lockState struct {
	Held   bool
	Fence  uint64 // 0 when unknown (orphan from an unknown acquire)
	Orphan bool
	Max    uint64 // lower bound of the highest fence handed out
}

var lockModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(in any) string { return in.(lockIn).Key }),
	Init:      func() []any { return []any{lockState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(lockState), input.(lockIn), output.(lockOut)
		var next []any
		for _, s := range expire(s) {
			next = append(next, lockStep(s, in, out)...)
		}
		return next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(lockIn), output.(lockOut)
		if in.Acquire {
			return fmt.Sprintf("acquire -> %+v", out)
		}
		return fmt.Sprintf("release(%d) -> %+v", in.Fence, out)
	},
}

// expire returns s and, for an orphaned lease, the state after its TTL ran
// out.
func expire(s lockState) []lockState {
	if s.Held && s.Orphan {
		return []lockState{s, {Max: s.Max}}
	}
	return []lockState{s}
}

func lockStep(s lockState, in lockIn, out lockOut) []any {
	if in.Acquire {
		switch {
		case out.Unknown:
			if s.Held {
				return []any{s}
			}
			return []any{s, lockState{Held: true, Orphan: true, Max: s.Max}}
		case out.OK:
			if s.Held || out.Fence <= s.Max {
				return nil
			}
			return []any{lockState{Held: true, Fence: out.Fence, Max: out.Fence}}
		default: // contention
			if !s.Held {
				return nil
			}
			return []any{s}
		}
	}
	mine := s.Held && s.Fence == in.Fence
	switch {
	case out.Unknown:
		if !mine {
			return []any{s}
		}
		o := s
		o.Orphan = true
		return []any{o, lockState{Max: s.Max}}
	case out.OK:
		if !mine {
			return nil
		}
		return []any{lockState{Max: s.Max}}
	default: // lost: the key was no longer ours
		if mine {
			return nil
		}
		return []any{s}
	}
}

// Ledger model, one key per partition. Claims use now = 0 and a lease of
// 60, takeovers now = 120 and a lease of 60 (logical times); -1 is the zero
// LeaseUntil.
type ledgerOp string

const (
	opAdmit    ledgerOp = "admit"
	opClaim    ledgerOp = "claim"
	opTakeover ledgerOp = "takeover"
	opRelease  ledgerOp = "release"
	opComplete ledgerOp = "complete"
)

type ledgerIn struct {
	Key   string
	Op    ledgerOp
	Seq   uint64 // admit
	Owner string
	Fence uint64 // release, complete
}

// ledgerOut is the result: Err is "" for success, else the error's class
// (nokey, active, notclaimed, notstale, fenced); OK is Admit's bool; Fence
// is a claim's or takeover's token.
type ledgerOut struct {
	Unknown bool
	Err     string
	OK      bool
	Fence   uint64
}

// ledgerState is one key's record. A KVStore raises a new record's fence
// to the insert's revision, which Admit does not return: until a claim
// reveals it, FenceKnown is false and Fence is only a lower bound (the
// real fence is at least Fence).
type ledgerState struct {
	Exists     bool
	Status     string
	Seq        uint64
	Fence      uint64
	FenceKnown bool
	Owner      string
	LeaseUntil int
}

// ledgerCand is one possible (output, next state) of an operation.
type ledgerCand struct {
	out  ledgerOut
	next ledgerState
	// anyFence: the output's fence may be any value above next.Fence
	// (a claim on a record whose fence is not known); next takes it.
	anyFence bool
}

// ledgerApply is the ledger's sequential specification: the possible
// results of in applied to s.
func ledgerApply(s ledgerState, in ledgerIn) []ledgerCand {
	final := s.Status == "completed"
	same := func(out ledgerOut) []ledgerCand { return []ledgerCand{{out: out, next: s}} }
	switch in.Op {
	case opAdmit:
		if s.Exists && (s.Seq >= in.Seq || final) {
			return same(ledgerOut{})
		}
		n := ledgerState{Exists: true, Status: "pending", Seq: in.Seq, Fence: s.Fence, FenceKnown: s.FenceKnown, LeaseUntil: -1}
		if !s.Exists {
			n.Fence, n.FenceKnown = 1, false // raised to the insert's revision (>= 1)
		}
		return []ledgerCand{{out: ledgerOut{OK: true}, next: n}}
	case opClaim, opTakeover:
		now := 0
		if in.Op == opTakeover {
			now = 120
		}
		if !s.Exists {
			return same(ledgerOut{Err: "nokey"})
		}
		if in.Op == opClaim {
			if s.LeaseUntil > now {
				return same(ledgerOut{Err: "active"})
			}
			if s.Status != "pending" && s.Status != "claimed" {
				return same(ledgerOut{Err: "notclaimed"})
			}
		} else {
			if s.Status != "claimed" {
				return same(ledgerOut{Err: "notclaimed"})
			}
			if s.LeaseUntil > now {
				return same(ledgerOut{Err: "notstale"})
			}
		}
		n := s
		n.Status, n.Owner, n.Fence, n.LeaseUntil = "claimed", in.Owner, s.Fence+1, now+60
		if !s.FenceKnown {
			n.Fence = s.Fence // lower bound; the output's fence exceeds it
			return []ledgerCand{{out: ledgerOut{}, next: n, anyFence: true}}
		}
		return []ledgerCand{{out: ledgerOut{Fence: n.Fence}, next: n}}
	case opRelease, opComplete:
		if !s.Exists {
			return same(ledgerOut{Err: "nokey"})
		}
		// The fence before the status, as the seed ledger says for
		// Release and Complete: a stale token is "fenced" whatever the
		// status; the record's own token on a record that is not
		// claimed is "notclaimed".
		fenced := same(ledgerOut{Err: "fenced"})
		if s.FenceKnown && in.Fence != s.Fence || !s.FenceKnown && in.Fence < s.Fence {
			return fenced
		}
		if s.Status != "claimed" {
			if !s.FenceKnown { // in.Fence may or may not be the record's
				return append(same(ledgerOut{Err: "notclaimed"}), fenced...)
			}
			return same(ledgerOut{Err: "notclaimed"})
		}
		n := s
		n.Fence, n.FenceKnown, n.LeaseUntil = in.Fence, true, -1
		if in.Op == opRelease {
			n.Status, n.Owner = "pending", ""
		} else {
			n.Status = "completed"
		}
		match := []ledgerCand{{out: ledgerOut{}, next: n}}
		if !s.FenceKnown { // in.Fence may or may not be the record's
			return append(match, fenced...)
		}
		return match
	}
	panic("unknown op " + string(in.Op))
}

var ledgerModel = porcupine.NondeterministicModel{
	Partition: partitionBy(func(in any) string { return in.(ledgerIn).Key }),
	Init:      func() []any { return []any{ledgerState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(ledgerState), input.(ledgerIn), output.(ledgerOut)
		var next []any
		if out.Unknown {
			next = append(next, s) // it never happened (or failed)
		}
		for _, c := range ledgerApply(s, in) {
			switch {
			case out.Unknown: // or it took effect
				if c.out.Err == "" {
					n := c.next
					if c.anyFence {
						n.Fence = c.next.Fence + 1 // still a lower bound
					}
					next = append(next, n)
				}
			case c.anyFence:
				if out.Err == "" && out.Fence > c.next.Fence {
					n := c.next
					n.Fence, n.FenceKnown = out.Fence, true
					next = append(next, n)
				}
			case c.out == out:
				next = append(next, c.next)
			}
		}
		return next
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

// partitionBy splits a history by the key of each operation's input: keys
// are independent objects, and small partitions keep checking fast.
func partitionBy(key func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := key(op.Input)
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	}
}
