package tmuxwatch

import (
	"bytes"
	"fmt"
	"testing"
)

// encodeOctal escapes raw as tmux control mode does in %output lines:
// bytes below 32 and the backslash become \ooo.
func encodeOctal(raw []byte) string {
	var b bytes.Buffer
	for _, c := range raw {
		if c < 32 || c == '\\' {
			fmt.Fprintf(&b, "\\%03o", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// tmuxSeeds are pane outputs from the unit tests: control sequences of each
// kind, a multibyte character, a long literal.
var tmuxSeeds = []string{
	"\x1b[?2004l\r\x1b[31mhello\x1b[0m w\xc3\xb6rld\r\n\x1b]0;title\x07tab\there\x1b]8;;http://x\x1b\\link\x1b(B!\x08\n",
	"not yet READY!",
	"a\\b\r\n\x1b[31mx w\xc3\xb6rld",
	"\x1bP1$r0m\x1b\\done\x1b_apc\x07\x1b^pm\x1b\\\x1bXsos\x07\x1b7\x1b8\x1b#8end",
	"\x1b[" + string(bytes.Repeat([]byte("1;"), 40)) + "mREADY",
}

// FuzzTmuxDecode checks the pane-output pipeline of wait_for_text
// (DecodeOctal per %output line, then Cleaner, then Finder) on arbitrary
// bytes: decoding undoes tmux's escaping; the cleaner's output is a pure
// function of the stream however it is split into writes (fed as two chunks
// at every split point it gives what one chunk gives) and holds no control
// bytes but newline and tab; and the finder reports the text exactly when
// the cleaned stream holds it, across any split.
func FuzzTmuxDecode(f *testing.F) {
	for _, s := range tmuxSeeds {
		f.Add([]byte(s), "READY")
		f.Add([]byte(s), "wörld")
	}
	f.Add([]byte("é"), "é")
	f.Fuzz(func(t *testing.T, raw []byte, text string) {
		if len(raw) > 256 {
			return // every split point is tried: keep it quadratic but small
		}
		if got := DecodeOctal(encodeOctal(raw)); !bytes.Equal(got, raw) {
			t.Fatalf("DecodeOctal(encode(%q)) = %q", raw, got)
		}
		if got := DecodeOctal(string(raw)); len(got) > len(raw) {
			t.Fatalf("decoding grew %d bytes to %d", len(raw), len(got))
		}

		var whole Cleaner
		clean := whole.Clean(raw)
		for _, c := range clean {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("control byte %#x left in %q", c, clean)
			}
		}
		want := bytes.Contains(clean, []byte(text))
		for i := 0; i <= len(raw); i++ {
			var c Cleaner
			a := c.Clean(raw[:i])
			b := c.Clean(raw[i:])
			if got := append(a, b...); !bytes.Equal(got, clean) {
				t.Fatalf("split at %d: %q, whole: %q", i, got, clean)
			}
			if text == "" {
				continue
			}
			fd := NewFinder(text)
			if got := fd.Feed(a) || fd.Feed(b); got != want {
				t.Fatalf("split at %d: found %v, whole stream holds %q: %v", i, got, text, want)
			}
		}
	})
}
