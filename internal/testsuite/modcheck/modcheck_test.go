package modcheck

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const core = "github.com/natscoord/natscoord"

// testOnly are modules that only natscoord's own tests use. None may appear
// in the module graph of a program that imports natscoord.
var testOnly = []string{"go.uber.org/goleak", "github.com/anishathalye/porcupine", "github.com/chromedp/chromedp"}

// adapterOnly are modules that only a nested adapter module requires
// (OpenTelemetry: kvlock/otelobserver, kvledger/worker/otelworker;
// client_golang: opstats/promcollector): the core module's go.mod
// requires none of them, so an importer pulls each only with its adapter.
var adapterOnly = []string{"go.opentelemetry.io/otel", "github.com/prometheus/client_golang"}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs name with args in dir and returns its combined output, failing
// t on a non-zero exit.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// requiredCoreVersion reads the version of the core module that the nested
// module at dir requires.
func requiredCoreVersion(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == core {
			return f[1]
		}
	}
	t.Fatalf("%s/go.mod does not require %s", dir, core)
	return ""
}

// proxy is a GOPROXY directory in the layout of the module proxy protocol.
type proxy struct{ dir string }

// add serves module mod at version ver with the given go.mod and files
// (paths relative to the module root).
func (p proxy) add(t *testing.T, mod, ver string, gomod []byte, files map[string][]byte) {
	t.Helper()
	at := filepath.Join(p.dir, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for name, data := range files {
		w, err := zw.Create(mod + "@" + ver + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": ver, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, data := range map[string][]byte{"list": []byte(ver + "\n"), ver + ".info": info, ver + ".mod": gomod, ver + ".zip": zbuf.Bytes()} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// inNested reports whether name (slash-separated, relative to the core
// module) lies in one of the nested modules: the directories below the
// core module with a go.mod of their own, which a zip of the core module
// leaves out. They are found in the commit's own files, so that a commit
// from before a nested module moved is cut the same way.
func inNested(name string, nested []string) bool {
	for _, n := range nested {
		if strings.HasPrefix(name, n+"/") {
			return true
		}
	}
	return false
}

// coreAt returns the core module's files at commit, as git stores them.
func coreAt(t *testing.T, root, commit string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("git", "archive", "--format=tar", commit)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git archive %s: %v (the nested modules must require a commit that is in this repository's history)", commit, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
	var nested []string
	for name := range files {
		if dir, ok := strings.CutSuffix(name, "/go.mod"); ok {
			nested = append(nested, dir)
		}
	}
	for name := range files {
		if inNested(name, nested) {
			delete(files, name)
		}
	}
	return files
}

// treeFiles returns the files below dir in the working tree.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// An outside user requires the OpenTelemetry observer and kvledger's
// public store suite with nothing but a module proxy: the build succeeds
// against the core module at the version the observer requires, and the
// user's module graph holds none of natscoord's test-only modules.
func TestOutsideUserBuildsNestedModuleWithoutReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program through a file module proxy")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to serve the required commit of the core module")
	}
	root := repoRoot(t)
	obsDir := filepath.Join(root, "kvlock", "otelobserver")
	ver := requiredCoreVersion(t, obsDir)
	commit := ver[strings.LastIndexByte(ver, '-')+1:]

	// The observer's own dependencies (OpenTelemetry) come from the module
	// cache, which this download fills the way any build of it would.
	run(t, obsDir, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "go", "mod", "download")
	modcache := strings.TrimSpace(run(t, root, nil, "go", "env", "GOMODCACHE"))
	// Tidy also wants the modules of the dependencies' tests (go-cmp for
	// OpenTelemetry's), which no build downloads: those come from the
	// proxy the machine uses, after the cache.
	goproxy := strings.TrimSpace(run(t, root, nil, "go", "env", "GOPROXY"))

	p := proxy{dir: t.TempDir()}
	coreFiles := coreAt(t, root, commit)
	p.add(t, core, ver, coreFiles["go.mod"], coreFiles)
	obsFiles := treeFiles(t, obsDir)
	const obsVer = "v0.0.0-20990101000000-000000000000"
	p.add(t, core+"/kvlock/otelobserver", obsVer, obsFiles["go.mod"], obsFiles)

	user := t.TempDir()
	gomod := fmt.Sprintf("module example.com/user\n\ngo 1.26.0\n\nrequire %s/kvlock/otelobserver %s\n", core, obsVer)
	main := `package main

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/metric/noop"
	tnoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/natscoord/natscoord/kvledger/storetest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/kvlock/otelobserver"
)

var _ = storetest.Run
var _ func(*testing.T) = nil

func main() {
	obs, err := otelobserver.New(noop.NewMeterProvider(), tnoop.NewTracerProvider())
	var _ kvlock.Observer = obs
	fmt.Println(err)
}
`
	for name, data := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(user, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A module cache of the test's own: the versions served here are made
	// up, so a cache shared with an earlier run could hold other contents
	// under the same version.
	env := []string{
		"GOMODCACHE=" + t.TempDir(),
		"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw", "GOSUMDB=off", "GOTOOLCHAIN=local", "GONOSUMDB=", "GOPRIVATE=",
		"GOPROXY=file://" + filepath.ToSlash(p.dir) + ",file://" + path.Join(filepath.ToSlash(modcache), "cache", "download") + "," + goproxy,
	}
	run(t, user, env, "go", "mod", "tidy")
	run(t, user, env, "go", "build", "-o", filepath.Join(t.TempDir(), "user"), ".")

	graph := run(t, user, env, "go", "list", "-m", "all")
	for _, m := range testOnly {
		if strings.Contains(graph, m+" ") {
			t.Errorf("an importer's module graph holds the test-only module %s:\n%s", m, graph)
		}
	}
	if m := "github.com/prometheus/client_golang"; strings.Contains(graph, m+" ") {
		t.Errorf("an importer of the OpenTelemetry observer pulls %s, the Prometheus collector's:\n%s", m, graph)
	}
	deps := run(t, user, env, "go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", ".")
	for _, line := range strings.Split(deps, "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		if strings.Contains(imports, "github.com/stretchr/testify") && !strings.HasPrefix(pkg, "github.com/stretchr/testify") {
			t.Errorf("building a program that imports the public store suite compiles testify (imported by %s)", pkg)
		}
	}
}

// The core module's go.mod, as it stands in this tree, requires none of the
// test-only modules nor the adapters' (OpenTelemetry, client_golang): what
// a program that imports natscoord reads from it (directly or as a pruned
// requirement) names only what the libraries need.
func TestCoreGoModRequiresNoTestOnlyModule(t *testing.T) {
	var mod struct{ Require []struct{ Path string } }
	out := run(t, repoRoot(t), []string{"GOWORK=off"}, "go", "mod", "edit", "-json")
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, out)
	}
	for _, r := range mod.Require {
		for _, m := range testOnly {
			if r.Path == m {
				t.Errorf("the core go.mod requires the test-only module %s; move the tests that use it into a nested module", m)
			}
		}
		for _, m := range adapterOnly {
			if r.Path == m || strings.HasPrefix(r.Path, m+"/") {
				t.Errorf("the core go.mod requires %s, which only a nested adapter module may", r.Path)
			}
		}
	}
}
