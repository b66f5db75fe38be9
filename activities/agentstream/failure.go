package agentstream

import (
	"fmt"
	"strings"

	"github.com/durawait/durawait/workflows"
)

// Gemini CLI's documented exit statuses that are blockers.
const (
	GeminiExitAuth       = 41 // FATAL_AUTHENTICATION_ERROR
	GeminiExitUntrusted  = 55 // the folder is not trusted
	maxStderrTailLines   = 5
	maxStderrTailRunes   = 800
	stderrTailReadWindow = 8 << 10
)

// StderrTailWindow is how many bytes from the end of a CLI's stderr a
// caller should read for Explain.
const StderrTailWindow = stderrTailReadWindow

// Explain completes the outcome of a run that exited with exitCode: a
// Gemini exit status that means a blocker becomes one (41: auth_failed, 55:
// the folder is not trusted), and a failure (exit_status, agent_error, or
// an exit-status blocker) carries the last lines of the CLI's stderr, so
// the caller reads why it failed. stderr is the end of the CLI's error
// output (see StderrTailWindow).
func Explain(out *workflows.AgentFinal, format string, exitCode int, stderr string) {
	tail := StderrTail(stderr)
	if out.Status == workflows.AgentFailed && format == workflows.AgentFormatGemini {
		switch exitCode {
		case GeminiExitAuth:
			out.Status = workflows.AgentBlocked
			out.Error = &workflows.AgentError{Code: workflows.BlockerAuth,
				Message: "Gemini CLI exited with status 41: authentication failed (set GEMINI_API_KEY or an auth method in the provider's env or settings)"}
		case GeminiExitUntrusted:
			out.Status = workflows.AgentBlocked
			out.Error = &workflows.AgentError{Code: workflows.BlockerPermission,
				Message: "Gemini CLI exited with status 55: it does not trust the folder (set GEMINI_CLI_TRUST_WORKSPACE=true in the provider's env, as the gemini preset does)"}
		}
	}
	if out.Error == nil || tail == "" {
		return
	}
	switch out.Error.Code {
	case workflows.ErrCodeExitStatus, workflows.ErrCodeAgentError, workflows.BlockerAuth, workflows.BlockerPermission:
		if !strings.Contains(out.Error.Message, tail) {
			e := *out.Error
			e.Message = fmt.Sprintf("%s; stderr: %s", e.Message, tail)
			out.Error = &e
		}
	}
}

// StderrTail returns the last few non-empty lines of a CLI's error output,
// joined with " | ", at most maxStderrTailRunes characters (keeping the end).
func StderrTail(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r", ""), "\n")
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < maxStderrTailLines; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			kept = append(kept, l)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return workflows.Tail(strings.Join(kept, " | "), maxStderrTailRunes)
}
