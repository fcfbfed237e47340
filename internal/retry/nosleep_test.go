package retry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testKits are the directories (from the repository root) of packages
// that only tests use: they may pause without a context.
var testKits = []string{"internal/testkit/natstest", "internal/testkit/dashtest", "internal/testkit/suitecheck", "internal/testsuite/bench",
	"internal/testsuite/chaos", "internal/testsuite/modcheck", "kvlock/locktest", "kvledger/storetest", "tasks/taskstest",
	"dashboard/browsertest", "examples"}

// No library code pauses with time.Sleep: such a pause ignores every
// context (the task runtime's outcome write used one between its tries).
// A pause between tries is a Policy's, which ends with its ctx.
func TestNoContextBlindSleep(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			for _, k := range testKits {
				if rel == k {
					return filepath.SkipDir
				}
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if ok && sel.Sel.Name == "Sleep" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" {
					found = append(found, fset.Position(sel.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "time.Sleep in library code: pause on a retry.Policy instead")
}
