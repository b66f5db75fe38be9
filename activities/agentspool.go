package activities

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/durawait/durawait/internal/agentproc"
)

// An invocation's spool folders on its host: one per turn (<base>,
// <base>.turn-N) and each run set aside after its machine lost it
// (<base>[.turn-N].lost.<time>), where base is spoolName of its ID. They
// hold the CLI's whole output, and stay after the invocation ended, for
// wait_agent's output and an operator's look, until Temporal no longer
// keeps the invocation (its retention): then the host removes them
// (SpooledInvocations, RemoveSpool).

// SpooledInvocations lists the invocations that have spool folders here
// and no CLI running in any of them: those retention may remove.
func (r *AgentRunner) SpooledInvocations() []string {
	entries, err := os.ReadDir(r.SpoolDir)
	if err != nil {
		return nil
	}
	ended := map[string]bool{}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(r.SpoolDir, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, invocationFile))
		id := string(raw)
		if err != nil || id == "" || !ofInvocation(e.Name(), spoolName(id)) {
			continue
		}
		if _, seen := ended[id]; !seen {
			ended[id] = true
			ids = append(ids, id)
		}
		if _, exited := agentproc.ExitCode(dir); !exited && agentproc.Running(dir) {
			ended[id] = false
		}
	}
	return slices.DeleteFunc(ids, func(id string) bool { return !ended[id] })
}

// RemoveSpool removes every spool folder of an invocation, unless a CLI of
// it still runs (then none), and reports how many it removed.
func (r *AgentRunner) RemoveSpool(invocationID string) (int, error) {
	base := spoolName(invocationID)
	entries, err := os.ReadDir(r.SpoolDir)
	if err != nil {
		return 0, fmt.Errorf("read the agent spool %s: %w", r.SpoolDir, err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || !ofInvocation(e.Name(), base) {
			continue
		}
		dir := filepath.Join(r.SpoolDir, e.Name())
		if _, exited := agentproc.ExitCode(dir); !exited && agentproc.Running(dir) {
			return 0, nil
		}
		dirs = append(dirs, dir)
	}
	var errs []error
	removed := 0
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("remove the spool of %s: %w", invocationID, err)
	}
	return removed, nil
}

// ofInvocation reports whether the spool folder name is one of the
// invocation whose first turn's folder is named base: base itself, or
// base followed by a dot (a turn, a run set aside). A base (spoolName of
// agent/<hex> or agent/<owner tag>/<hex>) holds no dot, so no other
// invocation's folder starts with base and a dot.
func ofInvocation(name, base string) bool {
	return name == base || strings.HasPrefix(name, base+".")
}
