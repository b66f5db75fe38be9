//go:build !linux

package agentproc

// becomeSubreaper: only Linux has child subreapers; elsewhere a process
// that leaves the CLI's process group outlives a stopped run.
func becomeSubreaper() error { return nil }

// sweepDescendants: nothing to sweep without a subreaper.
func sweepDescendants() {}

// reapZombies: without a subreaper no orphan becomes the supervisor's.
func reapZombies(int, <-chan struct{}) {}
