package agentproc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// supervisor's next), and reaps them. A process that does not die (stuck
// in the kernel: a hung mount) is left after sweepWait, so the run's end
// is still recorded.
func sweepDescendants() {
	deadline := time.Now().Add(sweepWait)
	for range maxSweepRounds {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			for !reaped(pid) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// reapZombies reaps, until stop is closed, the orphans that ended under
// the supervisor while its CLI runs (as their subreaper it is their
// parent now): each would stay a zombie, holding a pid, until the run
// ends. The CLI itself is left to its exec.Cmd.
func reapZombies(cli int, stop <-chan struct{}) {
	tick := time.NewTicker(zombieReapInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for _, pid := range childrenOf(os.Getpid()) {
			if pid != cli && zombie(pid) {
				reaped(pid)
			}
		}
	}
}

// reaped reaps pid if it has ended, without waiting.
func reaped(pid int) bool {
	var ws syscall.WaitStatus
	got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	return got == pid || err != nil // err: not (or no longer) our child
}

// zombie reports whether pid has ended and waits to be reaped.
func zombie(pid int) bool {
	state, _, ok := procStat(strconv.Itoa(pid))
	return ok && state == "Z"
}

// procStat reads a process's state and parent from /proc/<pid>/stat:
// "pid (comm) state ppid ...", where comm may hold spaces and parentheses.
func procStat(pid string) (state, ppid string, ok bool) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", "", false
	}
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 2 {
		return "", "", false
	}
	return f[0], f[1], true
}

const (
	// maxSweepRounds bounds the sweep: a process that forks faster than it
	// is killed cannot keep the supervisor from recording the run's end.
	maxSweepRounds = 100
	// sweepWait bounds the whole sweep.
	sweepWait = 10 * time.Second
)

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := strconv.Itoa(pid)
	var kids []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(e.Name()); ok && ppid == parent {
			kids = append(kids, n)
		}
	}
	return kids
}
