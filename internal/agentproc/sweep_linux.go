package agentproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes the supervisor the reaper of its CLI's orphaned
// descendants: a process that leaves the CLI's process group (setsid,
// setpgid) and outlives its parent becomes the supervisor's child instead
// of init's, so a stopped run's sweep finds it (sweepDescendants).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// sweepDescendants kills every process left under the supervisor once its
// CLI ended, round after round (a killed child's own children become the
// supervisor's next), and reaps them.
func sweepDescendants() {
	for range maxSweepRounds {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

// maxSweepRounds bounds the sweep: a process that forks faster than it is
// killed cannot keep the supervisor from recording the run's end.
const maxSweepRounds = 100

// childrenOf lists the processes whose parent is pid (/proc/<n>/stat).
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}
