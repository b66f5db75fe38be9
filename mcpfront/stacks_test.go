package mcpfront

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// offStack runs its function on another goroutine, returns once it has
// returned, and a panic of the function's goes on in the caller (where the
// tool handler's recovery catches it).
func TestOffStackRunsElsewhereAndPassesPanicsOn(t *testing.T) {
	ran := false
	offStack(func() { ran = true })
	assert.True(t, ran)
	assert.PanicsWithValue(t, "boom", func() { offStack(func() { panic("boom") }) })
}
