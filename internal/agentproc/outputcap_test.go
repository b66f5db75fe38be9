package agentproc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numberedLines writes lines "1" to "n", each padded to width bytes.
func numberedLines(from, n, width int) []byte {
	var b bytes.Buffer
	for i := from; i <= n; i++ {
		fmt.Fprintf(&b, "%-*d\n", width-1, i)
	}
	return b.Bytes()
}

// diskBytes is how much of the file at path is allocated on disk.
func diskBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

// assertHeadAndTail checks that lines are 1..head, then a contiguous run
// that ends with last: the head kept, the middle cut at a line boundary.
func assertHeadAndTail(t *testing.T, lines [][]byte, last int) {
	t.Helper()
	require.NotEmpty(t, lines)
	prev := 0
	gaps := 0
	for _, line := range lines {
		n, err := strconv.Atoi(string(bytes.TrimSpace(line)))
		require.NoError(t, err, "every line read is whole: %q", line)
		if n != prev+1 {
			gaps++
			assert.Greater(t, n, prev, "the lines stay in order")
		}
		prev = n
	}
	assert.Equal(t, 1, gaps, "one cut: the head, then the newest lines")
	assert.Equal(t, last, prev, "the newest line is kept")
	assert.Equal(t, "1", string(bytes.TrimSpace(lines[0])), "the head is kept")
}

// A file past its cap is cut in the middle: it keeps its head (whole
// lines) and at least half the cap of its newest output, frees the rest on
// disk, records the cut, and a reader gets whole lines either side of it.
func TestACutKeepsTheHeadAndTheNewestOutputAndFreesTheMiddle(t *testing.T) {
	path := filepath.Join(t.TempDir(), StdoutFile)
	require.NoError(t, os.WriteFile(path, numberedLines(1, 40000, 100), 0o600)) // 4 MB
	c := &outputCap{path: path, limit: MinOutputCap}
	var report bytes.Buffer
	c.check(&report)
	require.Empty(t, report.String(), "this file system punches holes")

	cut, ok := ReadCut(path)
	require.True(t, ok, "the cut is recorded")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(4_000_000), fi.Size(), "the file keeps its length: offsets do not move")
	assert.LessOrEqual(t, cut.From, int64(headKeep))
	assert.GreaterOrEqual(t, fi.Size()-cut.To, int64(MinOutputCap/2), "at least half the cap of newest output is kept")
	assert.Less(t, diskBytes(t, path), int64(MinOutputCap+headKeep+2*cutBlock), "the cut bytes are freed on disk")
	assertHeadAndTail(t, ReadLines(path), 40000)

	// More output: the next cut moves the end of the same cut on.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(numberedLines(40001, 60000, 100))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	c.check(&report)
	next, ok := ReadCut(path)
	require.True(t, ok)
	assert.Equal(t, cut.From, next.From, "the head stays")
	assert.Greater(t, next.To, cut.To)
	assert.Less(t, diskBytes(t, path), int64(MinOutputCap+headKeep+2*cutBlock))
	assertHeadAndTail(t, ReadLines(path), 60000)
}

// A reader that follows the file by offset reads up to the cut, then
// from its end, and is told the first line there is partial.
func TestAReaderByOffsetSkipsTheCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), StdoutFile)
	require.NoError(t, os.WriteFile(path, numberedLines(1, 30000, 100), 0o600))
	c := &outputCap{path: path, limit: MinOutputCap}
	c.check(&bytes.Buffer{})
	cut, ok := ReadCut(path)
	require.True(t, ok)

	head, next, skipped := ReadOutput(path, 0)
	assert.False(t, skipped)
	assert.Equal(t, cut.From, next, "the first read stops at the cut")
	assert.Equal(t, numberedLines(1, int(cut.From/100), 100), head)

	tail, end, skipped := ReadOutput(path, next)
	assert.True(t, skipped, "a read inside the cut starts past it")
	assert.Equal(t, int64(3_000_000), end)
	assert.NotContains(t, string(tail), "\x00", "no cut byte is read")

	rest, again, skipped := ReadOutput(path, end)
	assert.Empty(t, rest)
	assert.Equal(t, end, again)
	assert.False(t, skipped)
}

// A file under its cap is left alone, and nothing records a cut.
func TestAFileUnderItsCapIsNotCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), StdoutFile)
	require.NoError(t, os.WriteFile(path, numberedLines(1, 9000, 100), 0o600))
	c := &outputCap{path: path, limit: MinOutputCap}
	c.check(&bytes.Buffer{})
	_, ok := ReadCut(path)
	assert.False(t, ok)
	assert.Len(t, ReadLines(path), 9000)
}

// A supervised CLI that writes past the cap leaves a spool holding its
// head and its newest output, the cut recorded.
func TestASupervisedRunsOutputIsCappedOnDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	t.Setenv("DURAWAIT_TEST_SUPERVISE", "1")
	require.NoError(t, Start(Launch{Dir: dir, Argv: []string{"seq", "1", "800000"}, Cwd: t.TempDir(),
		MaxOutput: MinOutputCap, Supervisor: []string{os.Args[0]}}))
	waitFor(t, "the exit", func() bool { _, done := ExitCode(dir); return done })

	out := filepath.Join(dir, StdoutFile)
	_, ok := ReadCut(out)
	require.True(t, ok, "the run's output passed its cap: it was cut")
	assert.Less(t, diskBytes(t, out), int64(MinOutputCap+headKeep+2*cutBlock))
	assertHeadAndTail(t, ReadLines(out), 800000)
}
