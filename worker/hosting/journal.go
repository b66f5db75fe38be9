package hosting

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/durawait/durawait/workflows"
)

// JournalFolder is the folder, in a worker's data dir, where the loops of
// its own host are journaled while they run (loopJournal).
const JournalFolder = "loop-journal"

// journalTTL is how old a journal entry must be before the host's sweep
// may remove it, once its run is not listed as running and no loop of it
// runs here (the list trails by seconds, never by journalTTL).
const journalTTL = 15 * time.Minute

// loopJournal keeps on disk each loop of the worker's own host while it
// runs here: what its activity was given, and what it recorded since (a
// probe loop's ProbeRecord, an agent run's signalled blockers). The
// host's next start resumes them from it at once, with no read of
// Temporal: after a kill of a loaded host, the engine restarted with it is
// saturated for seconds, and its visibility trails the last waits begun,
// so a sweep that lists the host's waits and reads each one's history
// resumes hundreds of loops seconds late (the full soak on 4b42f63: waits
// answered `timeout` past their bound). The sweeps go on as before: they
// resume the loops the journal lacks (one whose activity was handed to a
// poll of the killed process) and stop those whose wait ended meanwhile.
//
// An entry is removed once its loop's end is answered (or Temporal says
// the activity is gone), and before its end file (endFiles) is removed: a
// kill before the entry's removal leaves both, and the loop resumed from
// the entry answers with the end on disk, not a second one; a kill between
// the two leaves only the end file, which no loop resumes and the sweep
// prunes.
type loopJournal struct {
	files *runFiles
	// expected are the waits whose loop this host is to run and may not
	// yet run (see expect).
	expected *runFiles
	// mu orders the rewrites of an entry (a record, a blocker) with its
	// removal.
	mu sync.Mutex
}

// journalEntry is one running loop on disk.
type journalEntry struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	ActivityID string `json:"activity_id"`
	// Activity is the loop activity's type (workflows.PollProbeActivityName, ...).
	Activity string `json:"activity"`
	// Input is the activity's input, as Temporal's JSON converter carries it.
	Input json.RawMessage `json:"input"`
	// Record is what a probe loop last recorded, once Temporal took it.
	Record *workflows.ProbeRecord `json:"record,omitempty"`
	// Signalled are the blockers (workflows.AgentBlocker.Key) an agent
	// run has signalled.
	Signalled []string `json:"signalled,omitempty"`
	// Turns are the answers an agent run has taken (AnswerAgent).
	Turns []workflows.AgentTurn `json:"turns,omitempty"`
}

func (e journalEntry) key() loopKey { return loopKey{e.WorkflowID, e.RunID} }

// newLoopJournal opens the journal in dir; nil (no journal) when dir is
// "".
func newLoopJournal(dir string) (*loopJournal, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := openRunFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("hosting: open the loop journal: %w", err)
	}
	expected, err := openRunFiles(filepath.Join(dir, expectedFolder))
	if err != nil {
		return nil, fmt.Errorf("hosting: open the loop journal: %w", err)
	}
	return &loopJournal{files: files, expected: expected}, nil
}

// expectedFolder is the journal's folder of expected loops (expect).
const expectedFolder = "expected"

// expectedEntry is a run whose loop this host is to run.
type expectedEntry struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// expect notes a run whose loop this host is to run, as soon as the host
// learns of it (its front started it, or it picked or claimed this host
// for it): before its loop's activity is scheduled, so before that
// activity can be handed to a poll of this process that a kill then
// loses. A restart looks each one up in Temporal directly (Runtime.sweep)
// until visibility lists it: a restarted engine's visibility can trail
// its last writes by tens of seconds (the full soak on ddcdb74: a wait
// begun 0.2 s before a kill went unlisted by three processes in a row,
// and answered 30 s past its bound).
func (j *loopJournal) expect(key loopKey) error {
	if err := j.expected.write(key, expectedEntry{WorkflowID: key.workflowID, RunID: key.runID}); err != nil {
		return fmt.Errorf("note an expected loop: %w", err)
	}
	return nil
}

// has reports whether the journal has a loop of the run.
func (j *loopJournal) has(key loopKey) bool {
	var e journalEntry
	return j.files.read(key, &e) && e.key() == key
}

// unexpect forgets an expected loop: visibility lists its run, its loop
// runs here (journaled), or its run ended.
func (j *loopJournal) unexpect(key loopKey) { j.expected.remove(key) }

// expectedKeys are the runs whose loops are expected; unreadable files
// are skipped (pruneExpected removes them once old).
func (j *loopJournal) expectedKeys() ([]loopKey, error) {
	var out []loopKey
	err := j.expected.each(func(body []byte) {
		var e expectedEntry
		if json.Unmarshal(body, &e) == nil && e.WorkflowID != "" && e.RunID != "" {
			out = append(out, loopKey{e.WorkflowID, e.RunID})
		}
	})
	return out, err
}

// pruneExpected removes the expected loops noted before now - journalTTL:
// visibility lists a run long before.
func (j *loopJournal) pruneExpected(now time.Time) {
	j.expected.prune(now, journalTTL, func([]byte) bool { return false })
}

// put journals a loop that starts.
func (j *loopJournal) put(e journalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.files.write(e.key(), e); err != nil {
		return fmt.Errorf("journal a loop: %w", err)
	}
	return nil
}

// update rewrites the entry of a run with change; nothing when it has
// none (its loop ended, or was never journaled).
func (j *loopJournal) update(key loopKey, change func(*journalEntry)) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var e journalEntry
	if !j.files.read(key, &e) || e.key() != key {
		return nil
	}
	change(&e)
	if err := j.files.write(key, e); err != nil {
		return fmt.Errorf("journal a loop's progress: %w", err)
	}
	return nil
}

// record journals what a probe loop recorded.
func (j *loopJournal) record(key loopKey, rec workflows.ProbeRecord) error {
	return j.update(key, func(e *journalEntry) { e.Record = &rec })
}

// signalled journals a blocker an agent run signalled.
func (j *loopJournal) signalled(key loopKey, code string) error {
	return j.update(key, func(e *journalEntry) {
		if !slices.Contains(e.Signalled, code) {
			e.Signalled = append(e.Signalled, code)
		}
	})
}

// answered journals an answer an agent run took.
func (j *loopJournal) answered(key loopKey, t workflows.AgentTurn) error {
	return j.update(key, func(e *journalEntry) {
		if !slices.ContainsFunc(e.Turns, func(have workflows.AgentTurn) bool { return have.Turn == t.Turn }) {
			e.Turns = append(e.Turns, t)
		}
	})
}

// remove forgets the loop of a run: its end was answered.
func (j *loopJournal) remove(key loopKey) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.files.remove(key)
}

// entries are the loops journaled; unreadable entries are skipped (the
// sweep's prune removes them once old).
func (j *loopJournal) entries() ([]journalEntry, error) {
	var out []journalEntry
	err := j.files.each(func(body []byte) {
		var e journalEntry
		if json.Unmarshal(body, &e) == nil && e.WorkflowID != "" && e.ActivityID != "" {
			out = append(out, e)
		}
	})
	return out, err
}

// prune removes the entries written before now - journalTTL that keep
// does not keep (the sweep's list of running waits, and the loops running
// here), unreadable ones as old, and a kill's leftover temporary files.
func (j *loopJournal) prune(now time.Time, keep func(loopKey) bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.files.prune(now, journalTTL, func(body []byte) bool {
		var e journalEntry
		return json.Unmarshal(body, &e) == nil && keep(e.key())
	})
}
