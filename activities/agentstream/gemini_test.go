package agentstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

// A reply streamed in many deltas keeps its last MaxFinalOutputBytes while
// it streams, and the final output says how much was cut (found by
// FuzzAgentStream: the reply used to grow without bound).
func TestGeminiLongStreamedReplyKeepsItsEnd(t *testing.T) {
	p, err := New(workflows.AgentFormatGemini, time.Now)
	require.NoError(t, err)
	var st State
	feed := func(v map[string]any) {
		b, _ := json.Marshal(v)
		for _, ev := range p.Parse(b) {
			assert.LessOrEqual(t, len(ev.Reply), MaxFinalOutputBytes)
			st.Apply(ev, now)
		}
	}
	chunk := strings.Repeat("é", 1000) // 2000 bytes
	const deltas = 200                 // 400,000 bytes in all
	for i := 0; i < deltas; i++ {
		feed(map[string]any{"type": "message", "role": "assistant", "delta": true, "content": chunk})
	}
	feed(map[string]any{"type": "message", "role": "assistant", "delta": true, "content": "THE END!"})
	feed(map[string]any{"type": "result", "status": "success"})

	out := st.Outcome(0)
	total := deltas*len(chunk) + len("THE END!")
	kept := MaxFinalOutputBytes // total is even, so the cut falls between two-byte characters
	head := fmt.Sprintf("[%d bytes cut]\n", total-kept)
	assert.True(t, strings.HasPrefix(out.Output, head), out.Output[:len(head)])
	assert.True(t, strings.HasSuffix(out.Output, "éTHE END!"))
	assert.Equal(t, len(head)+kept, len(out.Output))

	// A whole (non-delta) message starts the reply and the count over.
	feed(map[string]any{"type": "message", "role": "assistant", "content": "short"})
	feed(map[string]any{"type": "result", "status": "success"})
	assert.Equal(t, "short", st.Outcome(0).Output)
}
