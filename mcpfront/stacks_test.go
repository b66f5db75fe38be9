package mcpfront

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// offStack runs its function on another goroutine, returns once it has
// returned, and a panic of the function's goes on in the caller (where the
// tool handler's recovery catches it).
func TestOffStackRunsElsewhereAndPassesPanicsOn(t *testing.T) {
	ran := false
	offStack(func() { ran = true })
	assert.True(t, ran)
	defer func() {
		r := recover()
		require.NotNil(t, r, "the panic goes on in the caller")
		assert.Contains(t, r, "boom")
		assert.Contains(t, r, "TestOffStackRunsElsewhereAndPassesPanicsOn", "with the stack of fn's goroutine")
	}()
	offStack(func() { panic("boom") })
}

// A function that ends its goroutine (runtime.Goexit, as a test's FailNow
// does) ends the caller's too, rather than letting it go on as if fn had
// returned.
func TestOffStackPassesGoexitOn(t *testing.T) {
	wentOn := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		offStack(runtime.Goexit)
		wentOn = true
	}()
	<-done
	assert.False(t, wentOn)
}
