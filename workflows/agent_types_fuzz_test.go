package workflows

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// startAgentSeeds are arguments from the unit tests, and a few paths that
// try to leave the allowed roots.
var startAgentSeeds = []string{
	`{"provider":"codex","prompt":"fix it","cwd":"/srv/work/repo/../repo","model":"o4","session_id":"abc"}`,
	`{"provider":"claude","prompt":"go"}`,
	`{"prompt":"x"}`,
	`{"provider":"gpt","prompt":"x"}`,
	`{"provider":1,"prompt":"x"}`,
	`{"provider":"claude","prompt":"  "}`,
	`{"provider":"claude","prompt":"x","cwd":"repo"}`,
	`{"provider":"claude","prompt":"x","cwd":"/srv/work/../etc"}`,
	`{"provider":"claude","prompt":"x","cwd":"/srv/workshop"}`,
	`{"provider":"claude","prompt":"x","cwd":"/srv/work/..foo"}`,
	`{"provider":"claude","prompt":"x","cwd":"/home/ci//./a/../../ci"}`,
	`{"provider":"claude","prompt":"x","model":"--dangerously-skip-permissions"}`,
	`{"provider":"claude","prompt":"x","session_id":"-rf"}`,
	`{"provider":"claude","prompt":"x","timeout":3}`,
	`{"provider":"claude","prompt":"bad \udc00 \u0000","cwd":null,"model":null}`,
	`[]`, `null`, ``,
}

// FuzzParseStartAgent checks that ParseStartAgent never panics, names every
// refusal, and accepts only specs inside the operator's limits.
func FuzzParseStartAgent(f *testing.F) {
	for _, s := range startAgentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, err := ParseStartAgent(raw, limits)
		if err != nil {
			requireNamedErrors(t, err)
			return
		}
		if !slices.Contains(limits.Providers, spec.Provider) {
			t.Fatalf("provider %q is not configured", spec.Provider)
		}
		if strings.TrimSpace(spec.Prompt) == "" || len(spec.Prompt) > MaxPromptBytes {
			t.Fatalf("prompt broke its rules: %d bytes", len(spec.Prompt))
		}
		if !filepath.IsAbs(spec.Cwd) || filepath.Clean(spec.Cwd) != spec.Cwd || !insideAny(spec.Cwd, limits.AllowedRoots) {
			t.Fatalf("cwd %q is not a clean absolute path inside %v", spec.Cwd, limits.AllowedRoots)
		}
		for _, root := range limits.AllowedRoots {
			if rel, err := filepath.Rel(root, spec.Cwd); err == nil && !strings.HasPrefix(rel, "..") {
				if filepath.Join(root, rel) != spec.Cwd {
					t.Fatalf("cwd %q does not resolve inside %s", spec.Cwd, root)
				}
			}
		}
		if spec.Model != "" && strings.HasPrefix(spec.Model, "-") {
			t.Fatalf("model %q reads as a flag", spec.Model)
		}
		if spec.SessionID != "" && (strings.HasPrefix(spec.SessionID, "-") || len(spec.SessionID) > 256) {
			t.Fatalf("session_id %q broke its rules", spec.SessionID)
		}
		// The spec's JSON uses the argument names: re-parsing gives it back.
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseStartAgent(b, limits)
		if err != nil || again != spec {
			t.Fatalf("re-parse changed the spec: %v\n%+v\n%+v", err, spec, again)
		}
	})
}

// FuzzParseInvocationID checks wait_agent / cancel_agent argument parsing.
func FuzzParseInvocationID(f *testing.F) {
	for _, s := range []string{
		`{"invocation_id":"agent/0123abcd"}`, `{}`, `{"invocation_id":3}`,
		`{"invocation_id":"wait_for/x"}`, `{"invocation_id":"agent/1","x":1}`,
		`{"invocation_id":"agent/../../x"}`, `{"invocation_id":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, err := ParseInvocationID(raw)
		if err != nil {
			requireNamedErrors(t, err)
			return
		}
		if !strings.HasPrefix(id, AgentIDPrefix) || len(id) > 128 {
			t.Fatalf("accepted %q", id)
		}
	})
}
