package workflows

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseWaitForText checks that ParseWaitForText never panics, names
// every refusal, and accepts only the input schema's values: a pane ID of the
// pattern, lengths in bytes, valid UTF-8.
func FuzzParseWaitForText(f *testing.F) {
	for _, s := range []string{
		`{"target":{"paneId":"%12","generation":"g1:abc"},"text":"héllo ✓"}`,
		`{"target":{"paneId":"%0","generation":"g"},"text":"\ufffd is a real character"}`,
		`{"target":{"paneId":"3","generation":"g"},"text":"x"}`,
		`{"target":{"paneId":"%01","generation":"g"},"text":"x"}`,
		`{"target":{"paneId":"%1"},"text":"x"}`,
		`{"target":"%1","text":"x"}`,
		`{"target":{"paneId":"%1","generation":"g"},"text":""}`,
		`{"target":{"paneId":"%1","generation":"g"},"text":"bad \udc00 surrogate"}`,
		"{\"target\":{\"paneId\":\"%1\",\"generation\":\"g\"},\"text\":\"bad \xff byte\"}",
		`{"target":{"paneId":"%1","generation":"g"},"text":"x","extra":true}`,
		`{"target":{"paneId":"%1\n","generation":null},"text":["x"]}`,
		`[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, err := ParseWaitForText(raw)
		if err != nil {
			requireNamedErrors(t, err)
			return
		}
		if !paneIDPattern.MatchString(spec.Target.PaneID) || len(spec.Target.PaneID) > MaxPaneIDBytes {
			t.Fatalf("pane ID %q accepted", spec.Target.PaneID)
		}
		if len(spec.Target.Generation) > MaxGenerationBytes || !utf8.ValidString(spec.Target.Generation) {
			t.Fatalf("generation %q accepted", spec.Target.Generation)
		}
		if spec.Text == "" || len(spec.Text) > MaxTextBytes || !utf8.ValidString(spec.Text) {
			t.Fatalf("text %q accepted", spec.Text)
		}
		// A U+FFFD in the text must have been written by the caller.
		if strings.ContainsRune(spec.Text, utf8.RuneError) && !strings.Contains(strings.ToLower(string(raw)), `\ufffd`) &&
			!strings.Contains(string(raw), "\uFFFD") {
			t.Fatalf("text %q holds a replacement character the caller did not send", spec.Text)
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseWaitForText(b)
		if err != nil || again != spec {
			t.Fatalf("re-parse changed the spec: %v\n%+v\n%+v", err, spec, again)
		}
	})
}
