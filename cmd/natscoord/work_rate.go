package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/natscoord/natscoord/kvledger/worker"
)

// parseRate reads a rate limit "N/PERIOD" of `work --rate-limit` and
// --group-rate-limit: N starts per PERIOD, a Go duration ("3/2s",
// "100/1m30s") or a unit alone for one of it ("10/s", "100/m", "5/h").
// The worker checks the numbers (worker.RateLimit.Validate).
func parseRate(s string) (n int, period time.Duration, err error) {
	ns, ps, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, errors.New("want N/PERIOD, e.g. 3/2s or 100/m")
	}
	if n, err = strconv.Atoi(ns); err != nil {
		return 0, 0, fmt.Errorf("the count %q is not a number", ns)
	}
	switch ps {
	case "s", "m", "h":
		ps = "1" + ps
	}
	if period, err = time.ParseDuration(ps); err != nil {
		return 0, 0, fmt.Errorf("PERIOD %q is not a duration (e.g. 2s, 1m, h)", ps)
	}
	return n, period, nil
}

// rateLimits reads work's --rate-limit (for --kind) and
// --group-rate-limit (GROUP=N/PERIOD each) into the worker's limits,
// each checked here, so a bad one is refused before anything connects.
func (o workOptions) rateLimits() ([]worker.RateLimit, error) {
	var rls []worker.RateLimit
	add := func(flag, value string, rl worker.RateLimit) error {
		var err error
		if rl.N, rl.Period, err = parseRate(value); err == nil {
			err = rl.Validate()
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", flag, value, err)
		}
		rls = append(rls, rl)
		return nil
	}
	if o.rateLimit != "" {
		if err := add("--rate-limit", o.rateLimit, worker.RateLimit{Kind: o.kind}); err != nil {
			return nil, err
		}
	}
	for g, v := range o.groupRates {
		if g == "" {
			return nil, fmt.Errorf("--group-rate-limit =%s: name the group, GROUP=N/PERIOD", v)
		}
		if err := add("--group-rate-limit", g+"="+v, worker.RateLimit{Group: g}); err != nil {
			return nil, err
		}
	}
	return rls, nil
}
