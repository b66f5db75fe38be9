package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// What a process with the embedded engine logs as it starts it: it keeps
// its heap goal at or above internal/heapfloor's floor, or GOGC paces it.
const (
	heapFloorLine = "keeping the heap goal at or above a floor"
	gogcLine      = "GOGC is set: the collector paces as it says"
)

// A serve with the embedded engine keeps its heap goal at or above the
// floor (docs/operations.md, "Memory"); one whose environment sets GOGC
// leaves the pacing to it.
func TestServeKeepsAHeapFloorUnlessGOGCIsSet(t *testing.T) {
	t.Setenv("GOGC", "")
	w := newWorkspace(t)
	floored := w.startServe(w.writeConfig(w.demoServer("demo")))
	// Both lines are written as the engine starts, before the process is
	// healthy.
	assert.Contains(t, floored.log.String(), heapFloorLine)
	assert.NotContains(t, floored.log.String(), gogcLine)
	// The runtime's own figure: the percent is raised while the heap is
	// small, above durawait's base of 50.
	eventually(t, "the GC percent raised above 50", func() bool { return gcPercent(t, floored) > 50 })

	other := newWorkspace(t)
	paced := other.startServeWith(other.writeConfig(other.demoServer("demo")), freeAddr(t), []string{"GOGC=100"})
	assert.Contains(t, paced.log.String(), gogcLine)
	assert.NotContains(t, paced.log.String(), heapFloorLine, "GOGC set: no floor")
	assert.Equal(t, int64(100), gcPercent(t, paced), "GOGC=100 holds")
}

// gcPercent is the GC percent durawait's runtime reports on /metrics.
func gcPercent(t testing.TB, inst *instance) int64 {
	t.Helper()
	return scrapeActions(t, "http://"+inst.http+"/metrics", "go_gc_gogc_percent", func(map[string]string) bool { return true })[""]
}
