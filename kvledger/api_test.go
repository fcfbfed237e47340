package kvledger_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exportedAPI returns the exported names kvledger's non-test files
// declare at top level, methods as "Recv.Name".
func exportedAPI(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	api := make(map[string]bool)
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					api[d.Name.Name] = true
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					api[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							api[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								api[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return api
}

// The protocol only the task runtime calls is not kvledger's exported
// API: package worker reaches it through kvledger/internal/ledgerrt
// (runtime_hooks.go). What a user of the ledger needs beside it stays.
func TestRuntimeProtocolNotExported(t *testing.T) {
	api := exportedAPI(t)
	for _, name := range []string{"Ledger.ClaimLeasedFrom", "Ledger.Finish", "Ledger.FinishAsync", "Ledger.Pipelined", "RetryOrFail", "AttemptsUsed"} {
		require.False(t, api[name], "%s is the runtime's protocol: it belongs in kvledger/internal/ledgerrt, not kvledger's API", name)
	}
	// A user's claim under a lease it holds (beside workers), the display
	// of a claim's lease, the attempt limit a display shows, the store
	// capability a Store may implement, and the types the protocol's
	// signatures name.
	for _, name := range []string{"Ledger.ClaimLeased", "Ledger.ClaimLease", "Ledger.Complete", "Ledger.Release", "AttemptLimit",
		"DefaultMaxAttempts", "AsyncSwapper", "Outcome", "PendingFinish", "PendingFinish.Wait"} {
		require.True(t, api[name], "%s is part of kvledger's API", name)
	}
}
