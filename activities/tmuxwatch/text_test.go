package tmuxwatch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDecodeOctal(t *testing.T) {
	assert.Equal(t, "a\\b\r\n\x1b[31mx w\xc3\xb6rld", string(DecodeOctal(`a\134b\015\012\033[31mx wörld`)))
	assert.Equal(t, `\12`, string(DecodeOctal(`\12`)), "a short escape at the end is kept")
}

func TestCleanerDropsControlSequencesAcrossChunks(t *testing.T) {
	var c Cleaner
	raw := "\x1b[?2004l\r\x1b[31mhel" + "lo\x1b[0m w\xc3\xb6rld\r\n" +
		"\x1b]0;title\x07tab\there\x1b]8;;http://x\x1b\\link\x1b(B!\x08\n"
	var got strings.Builder
	// Feed one byte at a time: every sequence is split.
	for i := 0; i < len(raw); i++ {
		got.Write(c.Clean([]byte{raw[i]}))
	}
	assert.Equal(t, "hello wörld\ntab\therelink!\n", got.String())
}

func TestFinderMatchesAcrossChunks(t *testing.T) {
	f := NewFinder("READY")
	assert.False(t, f.Feed([]byte("not yet RE")))
	assert.False(t, f.Feed([]byte("A")))
	assert.True(t, f.Feed([]byte("DY!")))

	g := NewFinder("é")
	assert.False(t, g.Feed([]byte{0xc3}))
	assert.True(t, g.Feed([]byte{0xa9}), "a multibyte character split between writes")

	long := strings.Repeat("ab", 512) // 1024 bytes
	h := NewFinder(long)
	for i := 0; i < len(long)-1; i++ {
		assert.False(t, h.Feed([]byte{long[i]}))
	}
	assert.True(t, h.Feed([]byte{long[len(long)-1]}))
}
