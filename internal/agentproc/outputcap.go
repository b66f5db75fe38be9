package agentproc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// A run's output files (stdout, stderr) are capped: once the bytes a file
// holds pass the cap, the supervisor cuts the middle. It keeps the head
// (up to the last line that ends within headKeep bytes: a CLI's first
// lines name its session and model) and the newest output (at least half
// the cap), and frees the bytes between on disk (a hole punched in the
// file, Linux only). The file keeps its length, so the offsets of what
// follows do not move and a CLI that appends never notices; the cut bytes
// read as zeros.
//
// The cut is recorded beside the file, in <file>.cut, as two offsets
// ("<from> <to>": the bytes [from, to) were cut), written before the hole
// is punched. ReadOutput reads past it.
const (
	// CutSuffix names a file's cut record: stdout.cut, stderr.cut.
	CutSuffix = ".cut"
	// headKeep bounds the head a cut keeps.
	headKeep = 64 << 10
	// MinOutputCap is the smallest cap: a head and a tail both fit.
	MinOutputCap = 1 << 20
	// cutBlock aligns a hole to the file system's blocks (a hole frees
	// only whole blocks).
	cutBlock = 4096
	// capCheckInterval is how often the supervisor looks at its files'
	// sizes while the CLI runs.
	capCheckInterval = time.Second
)

// Cut is the region the supervisor cut out of an output file: bytes
// [From, To) read as zeros.
type Cut struct {
	From, To int64
}

// Bytes is how many bytes were cut.
func (c Cut) Bytes() int64 { return c.To - c.From }

// ReadCut reads the cut record of the output file at path; ok is false
// when nothing was cut.
func ReadCut(path string) (Cut, bool) {
	b, err := os.ReadFile(path + CutSuffix)
	if err != nil {
		return Cut{}, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return Cut{}, false
	}
	from, err1 := strconv.ParseInt(fields[0], 10, 64)
	to, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil || from < 0 || to <= from {
		return Cut{}, false
	}
	return Cut{From: from, To: to}, true
}

// ReadOutput returns what the output file at path holds from offset on,
// up to a cut if one lies ahead, and the offset to read from next. When
// offset lies inside the cut, the bytes returned start where the cut ends
// and skipped is true: their first line is the tail of one whose start was
// cut, which a reader of lines drops. A reader calls again until it gets
// nothing.
func ReadOutput(path string, offset int64) (data []byte, next int64, skipped bool) {
	for range 3 {
		before, cut := ReadCut(path)
		start, end := offset, int64(-1)
		if cut && start >= before.From && start < before.To {
			start, skipped = before.To, true
		} else if cut && start < before.From {
			end = before.From
		}
		data = readRange(path, start, end)
		// The supervisor records a cut before it punches the hole: a
		// record unchanged after the read means no hole was punched
		// under it.
		if after, ok := ReadCut(path); ok == cut && after == before {
			return data, start + int64(len(data)), skipped
		}
		skipped = false
	}
	return nil, offset, false
}

// readRange reads path from start to end (to its end when end < 0).
func readRange(path string, start, end int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil
	}
	var r io.Reader = f
	if end >= 0 {
		if end <= start {
			return nil
		}
		r = io.LimitReader(f, end-start)
	}
	b, _ := io.ReadAll(r)
	return b
}

// ReadLines returns the complete lines the output file at path holds,
// past any cut (the partial line after a cut dropped), and an unfinished
// last line as a line of its own.
func ReadLines(path string) [][]byte {
	var all []byte
	var offset int64
	for {
		chunk, next, skipped := ReadOutput(path, offset)
		if skipped {
			if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
				chunk = chunk[i+1:]
			} else {
				chunk = nil
			}
			if len(all) > 0 && all[len(all)-1] != '\n' {
				all = append(all, '\n')
			}
		}
		all = append(all, chunk...)
		if next == offset {
			break
		}
		offset = next
	}
	var lines [][]byte
	for line := range bytes.SplitSeq(all, []byte("\n")) {
		if line = bytes.TrimRight(line, "\r"); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}

// outputCap cuts one output file when it passes its cap.
type outputCap struct {
	path  string
	limit int64
	cut   Cut
	off   bool // the file system cannot punch holes: left uncut
}

// check cuts the file if the bytes it holds (its length less what was
// cut) pass the cap; a file system without holes is reported once in
// report and left whole.
func (c *outputCap) check(report io.Writer) {
	if c.off {
		return
	}
	fi, err := os.Stat(c.path)
	if err != nil {
		return
	}
	size := fi.Size()
	if size-c.cut.Bytes() <= c.limit {
		return
	}
	from := c.cut.From
	if c.cut.To == 0 {
		from = headEnd(c.path)
	}
	to := (size - c.limit/2) / cutBlock * cutBlock
	holeFrom := (from + cutBlock - 1) / cutBlock * cutBlock
	if to <= holeFrom || to <= c.cut.To {
		return
	}
	next := Cut{From: from, To: to}
	if err := writeAtomic(c.path+CutSuffix, fmt.Sprintf("%d %d\n", next.From, next.To)); err != nil {
		return
	}
	if err := punchHole(c.path, holeFrom, to-holeFrom); err != nil {
		// Nothing was cut: the record goes back to what is true.
		if c.cut.To == 0 {
			_ = os.Remove(c.path + CutSuffix)
		} else {
			_ = writeAtomic(c.path+CutSuffix, fmt.Sprintf("%d %d\n", c.cut.From, c.cut.To))
		}
		c.off = true
		fmt.Fprintf(report, "durawait supervisor: cannot cut %s to its cap (%v): it grows uncapped\n", c.path, err)
		return
	}
	c.cut = next
}

// headEnd is the offset just past the last line that ends within the
// first headKeep bytes of the file at path (0: no such line).
func headEnd(path string) int64 {
	head := readRange(path, 0, headKeep)
	return int64(bytes.LastIndexByte(head, '\n') + 1)
}

// capOutput checks the caps every capCheckInterval until stop closes, and
// once more then.
func capOutput(caps []*outputCap, report io.Writer, stop <-chan struct{}) {
	tick := time.NewTicker(capCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			for _, c := range caps {
				c.check(report)
			}
			return
		case <-tick.C:
			for _, c := range caps {
				c.check(report)
			}
		}
	}
}
