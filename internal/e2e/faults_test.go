package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A prompt that starts with '-' reaches the CLI as its prompt when the
// command ends its options with "--" (as the presets do), and is refused,
// never passed as an option, when a custom command does not.
func TestAPromptStartingWithADashStaysThePrompt(t *testing.T) {
	w := newWorkspace(t)
	require.NoError(t, os.MkdirAll(w.path("scripts"), 0o755))
	require.NoError(t, os.MkdirAll(w.path("work"), 0o755))
	var b strings.Builder
	fmt.Fprintf(&b, "[agents]\nwait_window_sec = 30\nallowed_roots = [%q]\n", w.path("work"))
	for name, cmd := range map[string][]string{
		"dashdash": {bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "--", "{prompt}"},
		"bare":     {bin.fakeagent, "--scripts", w.path("scripts"), "--argv-log", w.path("argv.log"), "{prompt}"},
	} {
		js, _ := json.Marshal(cmd)
		fmt.Fprintf(&b, "\n[agents.providers.%s]\nformat = \"claude-stream-json\"\ncommand = %s\nmodel = [\"--model\", \"{model}\"]\n", name, js)
	}
	config := w.writeConfigWith(b.String(), w.demoServer("demo"))
	const prompt = "--dangerously-skip-permissions"
	// The fake CLI plays the script named by its prompt's first word: this
	// one only when the prompt arrives as the prompt.
	require.NoError(t, os.WriteFile(w.path("scripts/"+prompt+".script"),
		[]byte(`{"type":"result","subtype":"success","is_error":false,"result":"played as a prompt","session_id":"s"}`+"\n"), 0o644))
	c := w.startServe(config).client(t)

	p := c.waitUntilFinished(t, c.startAgent(t, "dashdash", prompt, map[string]any{"model": "m1"}))
	assert.Equal(t, "succeeded", p.Status, "error: %+v", p.Error)
	assert.Equal(t, "played as a prompt", p.output())
	assert.Contains(t, readFile(w.path("argv.log")), "--model m1 -- "+prompt)

	p = c.waitUntilFinished(t, c.startAgent(t, "bare", prompt, nil))
	assert.Equal(t, "failed", p.Status)
	require.NotNil(t, p.Error)
	assert.Equal(t, "start_failed", p.Error.Code)
	assert.Contains(t, p.Error.Message, `add "--" before "{prompt}" in agents.providers.bare.command`)
	assert.Equal(t, 1, strings.Count(readFile(w.path("argv.log")), prompt), "the bare command never ran")
}
