package agentstream

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/durawait/durawait/workflows"
)

// FuzzAgentStream feeds arbitrary lines to the parser of each format (the
// first byte picks the format) and checks that no line panics, that parsing
// is a pure function of the lines, and that the folded State stays
// consistent: each blocker category wakes once, every blocker has a known
// category, a reply never outgrows the final-output cap by more than the
// line that brought it, and the outcome for each exit code is one of the
// documented ones.
func FuzzAgentStream(f *testing.F) {
	for i, format := range workflows.AgentFormats() {
		files, _ := filepath.Glob(filepath.Join("testdata", strings.SplitN(format, "-", 2)[0]+"*.jsonl"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(byte(i), data)
		}
		f.Add(byte(i), []byte(`{"type":"result","is_error":true,"subtype":"error","result":"Invalid API key"}`+"\n"+`not json`+"\n"+`{}`))
	}
	// Outputs past the 256 KiB cap are left to unit tests
	// (TestGeminiLongStreamedReplyKeepsItsEnd, the e2e 3 MB reply): seeds
	// that large slow the fuzzer down to a few runs a second.

	formats := workflows.AgentFormats()
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		format := formats[int(which)%len(formats)]
		lines := bytes.Split(data, []byte("\n"))
		first := run(t, format, lines)
		if second := run(t, format, lines); !reflect.DeepEqual(first.events, second.events) {
			t.Fatal("the same lines gave different events")
		}

		for _, ev := range first.events {
			if ev.Blocker != nil && !isBlockerCode(ev.Blocker.Code) {
				t.Fatalf("blocker with unknown category %q", ev.Blocker.Code)
			}
			if ev.Final != nil && ev.Final.Error != nil && ev.Final.Error.Code == "" {
				t.Fatal("final error without a code")
			}
		}
		seen := map[string]bool{}
		for _, b := range first.state.Blockers {
			if seen[b.Code] {
				t.Fatalf("blocker %q woke twice", b.Code)
			}
			seen[b.Code] = true
		}
		if len(first.woke) != len(first.state.Blockers) {
			t.Fatalf("%d wake-ups for %d blockers", len(first.woke), len(first.state.Blockers))
		}

		for _, exit := range []int{0, 1, 41} {
			checkOutcome(t, first.state, exit)
		}
		if format == workflows.AgentFormatText {
			checkTextOutput(t, first.parser.(Finisher).Finish(), lines)
		}
	})
}

type replayed struct {
	parser Parser
	events []Event
	state  State
	woke   []string
}

// run parses lines with a fresh parser, folding each event into a State.
func run(t *testing.T, format string, lines [][]byte) replayed {
	t.Helper()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p, err := New(format, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	r := replayed{parser: p}
	for _, line := range lines {
		evs := p.Parse(line)
		for _, ev := range evs {
			if len(ev.Reply) > MaxFinalOutputBytes+len(line) {
				t.Fatalf("%s: a reply of %d bytes from a line of %d: the parser's state grows without bound",
					format, len(ev.Reply), len(line))
			}
			if b := r.state.Apply(ev, at); b != nil {
				r.woke = append(r.woke, b.Code)
			}
		}
		r.events = append(r.events, evs...)
	}
	return r
}

// checkOutcome fails unless the outcome for exit is a documented one.
func checkOutcome(t *testing.T, st State, exit int) {
	t.Helper()
	out := st.Outcome(exit)
	switch out.Status {
	case workflows.AgentSucceeded:
		if exit != 0 || out.Error != nil || (st.Final != nil && st.Final.IsError) {
			t.Fatalf("exit %d: succeeded with error %+v, final %+v", exit, out.Error, st.Final)
		}
	case workflows.AgentBlocked:
		if out.Error == nil || !isBlockerCode(out.Error.Code) {
			t.Fatalf("exit %d: blocked without a blocker code: %+v", exit, out.Error)
		}
	case workflows.AgentFailed:
		if out.Error == nil || out.Error.Code == "" {
			t.Fatalf("exit %d: failed without an error code", exit)
		}
	default:
		t.Fatalf("exit %d: status %q", exit, out.Status)
	}
	if exit != 0 && out.Status == workflows.AgentSucceeded {
		t.Fatalf("exit %d reported as success", exit)
	}
	body := out.Output
	if strings.HasPrefix(body, "[") {
		if _, rest, ok := strings.Cut(body, " bytes cut]\n"); ok {
			body = rest
		}
	}
	if len(body) > MaxFinalOutputBytes {
		t.Fatalf("final output of %d bytes, over the %d cap", len(body), MaxFinalOutputBytes)
	}
}

// checkTextOutput checks the text format's final reply: the end of the
// lines joined by newlines, cut on a character boundary, with the cut
// counted exactly.
func checkTextOutput(t *testing.T, final *Final, lines [][]byte) {
	t.Helper()
	whole := bytes.Join(lines, []byte("\n"))
	if final.Dropped+len(final.Output) != len(whole) || !bytes.HasSuffix(whole, []byte(final.Output)) {
		t.Fatalf("kept %d bytes and dropped %d of %d", len(final.Output), final.Dropped, len(whole))
	}
	if len(final.Output) > MaxFinalOutputBytes {
		t.Fatalf("kept %d bytes, over the cap", len(final.Output))
	}
	if final.Dropped > 0 && utf8.Valid(whole) && !utf8.ValidString(final.Output) {
		t.Fatal("the cut split a character")
	}
}
