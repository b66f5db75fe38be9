package mcpfront

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHoldsCountCallers(t *testing.T) {
	var h holds
	r1 := h.hold("w")
	r2 := h.hold("w")
	assert.False(t, r1(), "another caller is still attached")
	assert.False(t, r1(), "a release counts once")
	assert.True(t, r2(), "the last caller")
	r3 := h.hold("w")
	assert.True(t, r3())
}
