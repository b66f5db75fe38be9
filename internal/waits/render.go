package waits

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/durawait/durawait/workflows"
)

// WriteJSON writes v as indented JSON, for scripts (--json).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteTable writes the list as a table: ID, run (its last 8 characters:
// an identical call made again after a wait ended is a new run of the same
// ID), tool, state, caller, started, how long it ran (or has
// run, at now), and what it waits for (its target; its summary when it has
// none: a wait started before targets were recorded).
func WriteTable(w io.Writer, ws []Wait, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRUN\tTOOL\tSTATE\tCALLER\tSTARTED\tDURATION\tTARGET")
	for _, x := range ws {
		took := "running " + Human(now.Sub(x.Started))
		if x.Closed != nil {
			took = Human(x.Closed.Sub(x.Started))
		}
		// A target is cut in its middle (its condition, at the end, stays);
		// a summary at its end (its bounds go first).
		target := workflows.CutMiddle(oneLine(x.Target, len(x.Target)+1), targetWidth)
		if x.Target == "" {
			target = oneLine(x.Summary, 80)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", field(x.ID), dash(field(shortRun(x.RunID))), dash(field(x.Tool)), dash(field(x.State)),
			dash(field(x.Caller)), x.Started.Local().Format(time.DateTime), took, dash(target))
	}
	return tw.Flush()
}

// targetWidth bounds the TARGET column, in bytes.
const targetWidth = 100

// shortRun is a run ID's last 8 characters, enough to tell the runs of
// one ID apart: run IDs are UUIDv7, whose first characters are the start
// time's top bits (the same for a minute), and whose last are random.
func shortRun(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// Human writes a duration for a person: "850ms", "42s", "3m05s",
// "2h03m", "3d04h".
func Human(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Human(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// WriteDetail writes a wait's detail for a person.
func WriteDetail(w io.Writer, d Detail) error {
	var b strings.Builder
	fmt.Fprintf(&b, "wait:     %s (run %s)\n", d.ID, d.RunID)
	fmt.Fprintf(&b, "tool:     %s (workflow %s)\n", dash(d.Tool), d.WorkflowType)
	fmt.Fprintf(&b, "state:    %s\n", d.State)
	fmt.Fprintf(&b, "caller:   %s\n", dash(d.Caller))
	fmt.Fprintf(&b, "started:  %s\n", d.Started.Local().Format(time.RFC3339))
	if d.Closed != nil {
		fmt.Fprintf(&b, "closed:   %s (after %s)\n", d.Closed.Local().Format(time.RFC3339), Human(d.Closed.Sub(d.Started)))
	}
	fmt.Fprintf(&b, "summary:  %s\n", dash(d.Summary))
	fmt.Fprintf(&b, "\narguments:\n  %s\n", asJSON(humanDurations(d.Arguments)))
	if len(d.Memo) > 0 {
		fmt.Fprintf(&b, "\nmemo:\n  %s\n", asJSON(d.Memo))
	}
	b.WriteString("\nstate changes:\n")
	for _, c := range d.Changes {
		fmt.Fprintf(&b, "  %s  %s", c.Time.Local().Format("2006-01-02 15:04:05.000"), c.What)
		if c.Identity != "" {
			fmt.Fprintf(&b, " (by %s)", c.Identity)
		}
		b.WriteString("\n")
	}
	if d.LastObservation != nil {
		fmt.Fprintf(&b, "\nlast observation:\n  %s\n", asJSON(d.LastObservation))
	}
	switch {
	case d.Result != nil:
		fmt.Fprintf(&b, "\nresult:\n  %s\n", asJSON(d.Result))
	case d.Failure != "":
		fmt.Fprintf(&b, "\nresult: %s\n", d.Failure)
	default:
		b.WriteString("\nresult: none yet (the wait runs)\n")
	}
	_, err := io.WriteString(w, printable(b.String(), "\n"))
	return err
}

// durationFields are the fields of durawait's workflow inputs that hold a
// Go duration (nanoseconds in JSON).
var durationFields = map[string]bool{"max_run": true, "answer_wait": true, "window": true, "within": true, "lease": true, "max_wait": true}

// humanDurations is v (a workflow input, decoded JSON) with each of its
// own duration fields written for a person ("6h00m" for 21600000000000);
// only the input's top level, never what a caller gave (a probe's
// arguments may have a "window" of their own). v itself is not changed;
// --json keeps the numbers.
func humanDurations(v any) any {
	in, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(in))
	for k, e := range in {
		if n, ok := e.(float64); ok && durationFields[k] {
			out[k] = Human(time.Duration(n))
			continue
		}
		out[k] = e
	}
	return out
}

// printable is s with every C0 and C1 control character (ESC and the
// rest, which a terminal would act on) replaced by U+FFFD, but those in
// keep. IDs, callers and summaries come from MCP callers, so nothing they
// hold reaches a terminal raw.
func printable(s, keep string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && !strings.ContainsRune(keep, r) {
			return utf8.RuneError
		}
		return r
	}, s)
}

// field is one table cell: printable, with no control character at all
// (a tab or newline would break the table).
func field(s string) string { return printable(s, "") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine is s on one line, printable, cut to max characters.
func oneLine(s string, max int) string {
	s = field(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
