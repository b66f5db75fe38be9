package workflows

import (
	"fmt"
	"regexp/syntax"
)

// Size limits of the native tools' arguments. Every one is checked by the
// tool's Parse function before anything starts, and a value over its limit
// is refused with an error that names the field and the limit
// (docs/limits.md lists them all). The limits of wait_for_text (its tmux contract)
// are MaxPaneIDBytes, MaxGenerationBytes and MaxTextBytes; a start_agent
// prompt is bounded by MaxPromptBytes.
const (
	// MaxProbeToolBytes bounds probe.tool, a "<server>.<tool>" name.
	MaxProbeToolBytes = 256
	// MaxProbeArgsBytes bounds probe.args, counted as the JSON the caller
	// sent. The canonical form stored with the wait stays far below
	// Temporal's 4 MiB message limit.
	MaxProbeArgsBytes = 64 * 1024
	// MaxPatternBytes bounds each regular expression (until.matches,
	// until.not_matches, until.fail_matches), in bytes of UTF-8.
	MaxPatternBytes = 4 * 1024
	// MaxPatternInstructions bounds the size of each regular expression's
	// compiled program (regexp/syntax instructions after simplification).
	// RE2 runs in time linear in the text, times a factor that grows with
	// the program: ordinary patterns compile to a few dozen instructions,
	// x{1000} to about a thousand; a program of 2000 instructions can still
	// take seconds over a 256 KiB output, which the probe loop bounds by the
	// wait's deadline.
	MaxPatternInstructions = 2000
	// MaxProviderBytes bounds start_agent's provider name.
	MaxProviderBytes = 64
	// MaxPathBytes bounds start_agent's cwd.
	MaxPathBytes = 4096
	// MaxModelBytes bounds start_agent's model name.
	MaxModelBytes = 256
	// MaxSessionIDBytes bounds start_agent's session_id.
	MaxSessionIDBytes = 256
	// MaxRequestIDBytes bounds start_agent's request_id.
	MaxRequestIDBytes = 128
	// MaxInvocationIDBytes bounds the invocation_id of wait_agent and
	// cancel_agent.
	MaxInvocationIDBytes = 128
	// MaxFanIn bounds the invocation_ids of one wait_agent call.
	MaxFanIn = 32
)

// PatternInstructions is the size of pattern's compiled RE2 program, the
// figure MaxPatternInstructions bounds. It parses with the flags
// regexp.Compile uses.
func PatternInstructions(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	return len(prog.Inst), nil
}

// overLimit is the rule text of a value over its size limit.
func overLimit(limit, got int, unit string) string {
	return fmt.Sprintf("must be at most %d %s (got %d)", limit, unit, got)
}
