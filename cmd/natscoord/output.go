package main

import (
	"encoding/json"
	"io"
	"strings"
)

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// nameList joins the names of a closed set (kvledger.Statuses,
// kvledger.Phases) for a help text: "pending, claimed, ...".
func nameList[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// maxCellWidth bounds, in display columns, every table cell but a row's
// last: every row is padded to its column's widest cell, so one huge
// cell (a task that needs 20,000 others) would otherwise make every row
// of the table as wide. The last cell is not padded, so it only widens
// its own row and is printed whole (`ledger show` prints whole values).
// --json prints every value exactly.
const maxCellWidth = 48

// writeTable prints an aligned table with a header row, two spaces
// between columns. Cells are escaped (escapeCell), truncated to
// maxCellWidth (truncateCell) but for the last of a row, and aligned by
// their display width, so any key keeps its row and its columns in place
// (text/tabwriter counts runes, which misaligns wide characters).
func writeTable(w io.Writer, header []string, rows [][]string) error {
	all := make([][]string, 0, len(rows)+1)
	all = append(all, header)
	all = append(all, rows...)
	var widths []int
	for r, row := range all {
		esc := make([]string, len(row))
		for i, c := range row {
			esc[i] = escapeCell(c)
			if i < len(row)-1 {
				esc[i] = truncateCell(esc[i], maxCellWidth)
			}
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(esc[i]))
		}
		all[r] = esc
	}
	var b strings.Builder
	for _, row := range all {
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSONLine prints v as one line of JSON (for streams of records).
func writeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
