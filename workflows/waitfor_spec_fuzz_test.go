package workflows

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
)

// waitForSeeds are arguments from the unit tests: valid calls, one per
// rule, and a few shapes the rules do not name.
var waitForSeeds = []string{
	`{"probe":{"tool":"kubectl_get","args":{"b":1,"a":{"y":2,"x":1.50}}},"until":{"matches":"Running"}}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"quiet_for_sec":10},"poll_sec":1,"max_wait_sec":30}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"not_matches":"Pending"},"max_wait_sec":900}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"Running","fail_matches":"CrashLoop"}}`,
	`{"until":{"matches":"x"},"probe":{"args":{"name":"b","ns":"a"},"tool":"k8s.kubectl_get"}}`,
	`{"probe":{"tool":""},"until":{"matches":"("},"poll_sec":0,"extra":1}`,
	`[1]`, `null`, `"x"`, `7`, ``, `{`,
	`{"probe":"kubectl_get","until":{"matches":"x"}}`,
	`{"probe":{"tool":"wait_for"},"until":{"matches":"x"}}`,
	`{"probe":{"tool":"kubectl_get","args":null},"until":{"matches":"x"}}`,
	`{"probe":{"tool":"kubectl_get","args":{"n":1e400}},"until":{"matches":"x"}}`,
	`{"probe":{"tool":"kubectl_get","args":{"s":"\ud800<&>"}},"until":{"matches":"x"}}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"a","not_matches":"b","quiet_for_sec":3}}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"(a)\\1"}}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"quiet_for_sec":1.5}}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"quiet_for_sec":400},"max_wait_sec":600}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"x"},"poll_sec":"2"}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"x"},"poll_sec":301,"max_wait_sec":1000}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"x"},"poll_sec":1e308,"max_wait_sec":-0}`,
	`{"probe":{"tool":"kubectl_get"},"until":{"matches":"x"},"max_wait_sec":2}`,
}

// FuzzParseWaitFor checks that ParseWaitFor never panics, that every refusal
// is a ValidationError naming a field, and that every accepted spec holds
// the documented rules and survives a round trip through its own fields.
func FuzzParseWaitFor(f *testing.F) {
	for _, s := range waitForSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		spec, err := ParseWaitFor(raw, fakeTools{})
		if err != nil {
			requireNamedErrors(t, err)
			return
		}
		checkWaitForSpec(t, spec)

		// Re-parsing the spec's own fields gives the same spec and ID.
		again, err := ParseWaitFor(specArguments(t, spec), fakeTools{})
		if err != nil {
			t.Fatalf("re-parse of %+v: %v", spec, err)
		}
		if !equalSpecs(spec, again) || spec.WorkflowID("") != again.WorkflowID("") {
			t.Fatalf("re-parse changed the spec:\n%+v\n%+v", spec, again)
		}
		// So does a round trip through the spec's own JSON (workflow input).
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var decoded WaitForSpec
		if err := json.Unmarshal(b, &decoded); err != nil || !equalSpecs(spec, decoded) {
			t.Fatalf("JSON round trip changed the spec: %v\n%+v\n%+v", err, spec, decoded)
		}
	})
}

// requireNamedErrors fails unless err is a ValidationError whose every
// entry names a field and a rule.
func requireNamedErrors(t *testing.T, err error) {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Errors) == 0 {
		t.Fatalf("error is not a ValidationError with entries: %v", err)
	}
	for _, fe := range verr.Errors {
		if fe.Field == "" || fe.Rule == "" {
			t.Fatalf("an entry names no field or rule: %q", err)
		}
	}
}

// checkWaitForSpec fails unless spec holds WaitForSpec's documented rules.
func checkWaitForSpec(t *testing.T, spec WaitForSpec) {
	t.Helper()
	if spec.Probe.Tool != "k8s.kubectl_get" {
		t.Fatalf("probe tool not canonical: %q", spec.Probe.Tool)
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(spec.Probe.Args, &args); err != nil || args == nil {
		t.Fatalf("probe args not a JSON object: %s (%v)", spec.Probe.Args, err)
	}
	if canon, err := CanonicalObject(spec.Probe.Args); err != nil || string(canon) != string(spec.Probe.Args) {
		t.Fatalf("probe args not canonical: %s vs %s (%v)", spec.Probe.Args, canon, err)
	}
	if !(0 < spec.PollSec && spec.PollSec < spec.MaxWaitSec && spec.MaxWaitSec <= MaxWaitCeilingSec) {
		t.Fatalf("bounds broken: poll_sec %d, max_wait_sec %d", spec.PollSec, spec.MaxWaitSec)
	}
	u := spec.Until
	switch u.Kind {
	case ConditionMatches, ConditionNotMatches:
		mustCompile(t, u.Pattern)
		if u.QuietForSec != 0 {
			t.Fatalf("two conditions: %+v", u)
		}
	case ConditionQuietForSec:
		if u.Pattern != "" || u.QuietForSec <= 0 || u.QuietForSec > spec.MaxWaitSec {
			t.Fatalf("quiet_for_sec broken: %+v (max_wait_sec %d)", u, spec.MaxWaitSec)
		}
	default:
		t.Fatalf("no condition: %+v", u)
	}
	if u.FailPattern != "" {
		mustCompile(t, u.FailPattern)
	}
}

func mustCompile(t *testing.T, pattern string) {
	t.Helper()
	if pattern == "" {
		t.Fatal("empty pattern accepted")
	}
	if _, err := regexp.Compile(pattern); err != nil {
		t.Fatalf("pattern %q accepted but does not compile: %v", pattern, err)
	}
}

// specArguments writes spec back as wait_for arguments.
func specArguments(t *testing.T, spec WaitForSpec) json.RawMessage {
	t.Helper()
	until := map[string]any{}
	switch spec.Until.Kind {
	case ConditionQuietForSec:
		until["quiet_for_sec"] = spec.Until.QuietForSec
	default:
		until[string(spec.Until.Kind)] = spec.Until.Pattern
	}
	if spec.Until.FailPattern != "" {
		until["fail_matches"] = spec.Until.FailPattern
	}
	b, err := json.Marshal(map[string]any{
		"probe": map[string]any{"tool": spec.Probe.Tool, "args": spec.Probe.Args},
		"until": until, "poll_sec": spec.PollSec, "max_wait_sec": spec.MaxWaitSec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalSpecs(a, b WaitForSpec) bool {
	return a.Probe.Tool == b.Probe.Tool && string(a.Probe.Args) == string(b.Probe.Args) &&
		a.Until == b.Until && a.PollSec == b.PollSec && a.MaxWaitSec == b.MaxWaitSec
}
