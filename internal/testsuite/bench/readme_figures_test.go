package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's measured figures are BENCHMARKS.md's: every rate (9.6k,
// 1464/s) and ratio (0.91) of its "Guarantees, measured" section is
// written in BENCHMARKS.md, and every "YYYY-MM-DD, build H" it cites
// anywhere names a date and a build BENCHMARKS.md records. (A figure is
// found as text, so one rounded off a row, "18k" for 17,769, is not.)
func TestReadmeFiguresAreBenchmarkRows(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		require.NoError(t, err)
		return string(b)
	}
	readme, bench := read("README.md"), read("BENCHMARKS.md")
	start := strings.Index(readme, "## Guarantees, measured")
	require.GreaterOrEqual(t, start, 0)
	section := readme[start:]
	section = section[:strings.Index(section[1:], "\n## ")+1]

	figure := regexp.MustCompile(`\b(\d+(?:\.\d+)?k|\d{1,3}(?:,\d{3})+|\d+/s|[01]\.\d+)\b`)
	figures := figure.FindAllString(section, -1)
	require.NotEmpty(t, figures)
	for _, f := range figures {
		require.True(t, strings.Contains(bench, f), "README's figure %q is not in BENCHMARKS.md", f)
	}
	cite := regexp.MustCompile(`(\d{4}-\d{2}-\d{2}),\s+(?:build|main)\s+([0-9a-f]{7,})`)
	cites := cite.FindAllStringSubmatch(readme, -1)
	require.NotEmpty(t, cites, "the README cites its figures' rows")
	for _, c := range cites {
		require.True(t, strings.Contains(bench, c[1]), "README cites the date %s, which BENCHMARKS.md does not name", c[1])
		require.True(t, strings.Contains(bench, c[2]), "README cites the build %s, which BENCHMARKS.md does not name", c[2])
	}
}
