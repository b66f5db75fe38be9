package mcpfront

import (
	"strings"
	"unicode/utf8"
)

// shorten returns the first n runes of s's first line, with an ellipsis when cut.
func shorten(s string, n int) string {
	line, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if utf8.RuneCountInString(line) > n {
		line = string([]rune(line)[:n])
		cut = true
	}
	if cut {
		line += "…"
	}
	return line
}
