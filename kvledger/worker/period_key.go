package worker

import (
	"strings"
	"time"

	"github.com/natscoord/natscoord/kvledger"
)

// periodKeyPrefix starts every key PeriodKey makes.
const periodKeyPrefix = "schedule/"

// ParsePeriodKey reads a key PeriodKey made: the schedule's name and the
// period's start. It reports false for any other key. A name may hold
// "/": the period start, written in RFC 3339, never does.
func ParsePeriodKey(key kvledger.IdempotencyKey) (name string, start time.Time, ok bool) {
	rest, found := strings.CutPrefix(string(key), periodKeyPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !found || i <= 0 {
		return "", time.Time{}, false
	}
	start, err := time.Parse(time.RFC3339, rest[i+1:])
	if err != nil {
		return "", time.Time{}, false
	}
	return rest[:i], start, true
}
