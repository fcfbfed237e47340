package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// parseNeeds parses --needs: comma-separated task keys. Spaces around a key
// are dropped; an empty entry, a repeated key or a key equal to self is an
// error, because each would be a typo rather than a dependency.
func parseNeeds(self, s string) ([]kvledger.IdempotencyKey, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]kvledger.IdempotencyKey, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for i, p := range parts {
		k := strings.TrimSpace(p)
		switch {
		case k == "":
			return nil, fmt.Errorf("--needs: entry %d is empty", i+1)
		case k == self:
			return nil, fmt.Errorf("--needs: %q cannot need itself", k)
		case seen[k]:
			return nil, fmt.Errorf("--needs: %q is listed twice", k)
		}
		seen[k] = true
		out = append(out, kvledger.IdempotencyKey(k))
	}
	return out, nil
}

// parseStatus parses --status of `ledger complete`: completed (also done,
// ok) or failed (also fail), in any case.
func parseStatus(s string) (kvledger.Status, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "completed", "complete", "done", "ok":
		return kvledger.StatusCompleted, nil
	case "failed", "fail":
		return kvledger.StatusFailed, nil
	}
	return "", fmt.Errorf("--status: %q is not completed or failed", s)
}

// parseTask parses --task: one JSON value (object, array, string, number,
// bool). Empty means no payload.
func parseTask(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("--task: not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("--task: trailing data after the JSON value")
	}
	if v == nil {
		return nil, nil
	}
	return v, nil
}

// compactJSON renders v on one line for tables.
func compactJSON(v any) string {
	if v == nil {
		return "-"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}
