// Package cronspec parses schedule specs: "@every <duration>", the
// predefined names (@hourly, @daily...) and five-field cron patterns. It
// is the one parser of the runtime's schedules: kvledger checks a stored
// schedule's spec with it when the schedule is declared, and the worker
// (kvledger/worker) computes each schedule's periods with it.
//
//	sp, err := cronspec.Parse("0 5 * * *", newYork)
//	next := sp.Next(now) // the first period start after now
//
// A cron pattern names wall times of its zone, and Spec.Next returns the
// first instant after its argument at which the zone's clock shows one:
//
//   - A wall time that a change of offset skips (02:30 when New York
//     springs forward, midnight when Santiago does) does not occur, and
//     does not fire that day: the next one that occurs does.
//   - A wall time that a change shows twice (01:30 when New York falls
//     back) fires once, at its first showing. "0 * * * *" fires at
//     01:00 EDT and next at 02:00 EST, two hours later.
//
// That is standard cron's rule for a repeated hour; robfig/cron fires
// it twice. @every periods are instants (multiples of the interval since
// the Unix epoch) and no zone changes them.
//
// Bounds: Next always returns a time after its argument, or the zero
// time when no wall time of the pattern occurs in the eight years after
// it (in any zone every date that exists occurs in eight years, so Parse
// refuses a pattern that no date matches, and the zero time comes only
// from a pattern whose every match a zone skips). Its search takes at
// most about one step per day and one per change of offset in those
// eight years: under a millisecond for any pattern, in any zone.
package cronspec
