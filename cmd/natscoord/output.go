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

// writeTable prints an aligned table with a header row, two spaces
// between columns. Cells are escaped (escapeCell) and aligned by their
// display width, so any key keeps its row and its columns in place
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
