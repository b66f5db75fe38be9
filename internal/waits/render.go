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
)

// WriteJSON writes v as indented JSON, for scripts (--json).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteTable writes the list as a table: ID, tool, state, caller, started,
// summary.
func WriteTable(w io.Writer, ws []Wait) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTOOL\tSTATE\tCALLER\tSTARTED\tSUMMARY")
	for _, x := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", field(x.ID), dash(field(x.Tool)), dash(field(x.State)), dash(field(x.Caller)),
			x.Started.Local().Format(time.DateTime), dash(oneLine(x.Summary, 80)))
	}
	return tw.Flush()
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
		fmt.Fprintf(&b, "closed:   %s (after %s)\n", d.Closed.Local().Format(time.RFC3339), d.Closed.Sub(d.Started).Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "summary:  %s\n", dash(d.Summary))
	fmt.Fprintf(&b, "\narguments:\n  %s\n", asJSON(d.Arguments))
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
