package modcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// timeCalls are the functions of package time that read the clock or arm
// a timer on it. Library code gets them from a Clock (internal/clock):
// the component's, which a caller or a test chooses, or clock.Real()
// where only real time makes sense (a bound on a wait for the server or
// a child process), so that every read of the time is one the code chose.
var timeCalls = []string{"Now", "Since", "Until", "After", "AfterFunc", "NewTimer", "Tick", "NewTicker"}

// clockExempt are the places that may call time's clock directly, each
// with why; funcs limits an exemption to some of timeCalls (nil: all). A
// path ending in "/" is a directory and everything under it. An entry
// that no longer matches any call fails the test, so the list only
// shrinks.
var clockExempt = map[string]exemption{
	// The one clock: Real, its timers and the stopwatch are time's.
	"internal/clock/": {nil, "the clock itself"},

	// Bounds on waits for the server. nats.go takes its deadlines as
	// contexts, which end on the real clock (see kvx.OpTimeout), and
	// these timers and reads bound the same waits: time the server takes,
	// which no Clock of a caller or a test can make pass.
	"internal/kvx/optimeout.go":     {nil, "a shared context's deadline, on the real clock as every context's"},
	"internal/kvx/hub.go":           {nil, "bounds the stop of a watch (a request to the server)"},
	"internal/kvx/hub_reconnect.go": {nil, "bounds the opening of a watch"},
	"internal/kvx/hub_start.go":     {nil, "bounds the opening of a watch"},
	"internal/kvx/publish_reply.go": {nil, "bounds the drain of a reply subscription"},
	"internal/kvx/scan_latest.go":   {nil, "bounds a replica's catch-up"},
	"internal/retry/retry.go":       {nil, "the pause between tries of a call to the server"},
	"embedded/":                     {nil, "waits, bounded, for an embedded server to start and elect"},

	// The CLI is an application: it reads the time from one place
	// (cmd/natscoord/clock.go, wall), and its timers bound waits on child
	// processes, the network and the user in real time.
	"cmd/natscoord/": {[]string{"After", "AfterFunc", "NewTimer"}, "the CLI's real-time bounds on processes, the network and the user"},

	// OpenTelemetry timestamps a span in wall time: its end is the moment
	// the hook runs, not a time a caller chooses. Nested modules.
	"kvlock/otelobserver/":        {[]string{"Now"}, "OTel span timestamps are wall time"},
	"kvledger/worker/otelworker/": {[]string{"Now"}, "OTel span timestamps are wall time"},

	// Test support, run only from tests: bounded waits in real time.
	"kvlock/locktest/": {nil, "a test-support package: its waits bound a test in real time"},
	"tasks/taskstest/": {[]string{"Now"}, "a test-support package: its failure messages name a task's phase now"},
}

type exemption struct {
	funcs  []string
	reason string
}

// skipDir are trees that are not library code: tests and examples.
func skipDir(rel string) bool {
	switch rel {
	case "internal/testsuite", "internal/testkit", "examples", "dashboard/browsertest", ".git":
		return true
	}
	return strings.HasPrefix(filepath.Base(rel), ".") || filepath.Base(rel) == "testdata"
}

// Library code reads the time only through a Clock: a bare time.Now()
// (or Since, Until, a timer) is a time no caller or test can choose, and
// a third way of the time next to the `now` parameters and Clock.
func TestLibraryReadsTimeOnlyThroughClock(t *testing.T) {
	root := repoRoot(t)
	used := map[string]bool{}
	var bad []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, c := range bareTimeCalls(t, p) {
			if ex := exemptFor(rel, c.fn); ex != "" {
				used[ex] = true
				continue
			}
			bad = append(bad, fmt.Sprintf("%s:%d: time.%s", rel, c.line, c.fn))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("library code calls time's clock directly (use the component's Clock, or clock.Real() for a real-time bound; or add an exemption with its reason to clockExempt):\n\t%s", strings.Join(bad, "\n\t"))
	}
	for ex := range clockExempt {
		if !used[ex] {
			t.Errorf("clockExempt[%q] matches no call any more: remove it", ex)
		}
	}
}

func exemptFor(rel, fn string) string {
	for ex, e := range clockExempt {
		if (rel == ex || strings.HasSuffix(ex, "/") && strings.HasPrefix(rel, ex)) &&
			(e.funcs == nil || slices.Contains(e.funcs, fn)) {
			return ex
		}
	}
	return ""
}

type timeCall struct {
	line int
	fn   string
}

// bareTimeCalls returns each use of a timeCalls function of package time
// in the file (called, or passed as a value).
func bareTimeCalls(t *testing.T, path string) []timeCall {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "time" {
			name = "time"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	var at []timeCall
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && slices.Contains(timeCalls, sel.Sel.Name) {
			at = append(at, timeCall{fset.Position(sel.Pos()).Line, sel.Sel.Name})
		}
		return true
	})
	return at
}
