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
// first instant after its argument at which the zone's clock shows one,
// or at which a gap that skipped one ends:
//
//   - A wall time that a change of offset skips (02:30 when New York
//     springs forward, midnight when Santiago does) fires at the first
//     instant after the gap (03:00 EDT; 01:00 in Santiago), so a daily
//     job still runs that day. Several skipped in one gap fire once, and
//     once with the wall time the gap ends on if it matches too:
//     "*/15 * * * *" fires at 01:45 EST, then 03:00 EDT.
//   - A wall time that a change shows twice (01:30 when New York falls
//     back) fires once, at its first showing. "0 * * * *" fires at
//     01:00 EDT and next at 02:00 EST, two hours later.
//
// That is Vixie cron's (and cronie's) rule for a fixed-time job, here for
// every pattern: "5 * * * *" fires at 01:05 EST, 03:00 EDT (for the
// skipped 02:05) and 03:05 EDT. robfig/cron fires a repeated hour twice.
// @every periods are instants (multiples of the interval since the Unix
// epoch) and no zone changes them.
//
// Bounds: Next always returns a time after its argument and within eight
// years of it (in any zone every date that exists occurs in eight years,
// so Parse refuses a pattern that no date matches, and every match fires,
// shown or skipped); the zero time only for the zero Spec. Its search
// takes at most about one step per day and one per change of offset in
// those eight years: under a millisecond for any pattern, in any zone.
package cronspec
