package hosting

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
)

// EndsFolder is the folder, in a worker's data dir, where its loops' ends
// wait for Temporal to record them (endFiles).
const EndsFolder = "loop-ends"

// endFileTTL is how old an end file must be before the host's sweep may
// remove it, once its run no longer runs (prune). A wait's bound can be
// hours (an agent's max_run_sec, a text wait's tmux.wait_max_sec), so age
// alone never removes a file whose run still runs.
const endFileTTL = 15 * time.Minute

// endFiles keeps loop ends on disk, one file per workflow run, from the
// moment a caller is told one until Temporal records it. A worker killed
// in between (the crash soak's kill storms: the in-process feed had
// answered, Temporal had not) leaves the end to its host's next start,
// which answers the loop's activity with it, or the wait's LoopAnswer,
// instead of running the loop again: the run then records what its caller
// was told, not a second loop's different end or no end at all. A crash
// of the machine may lose the last ends (runFiles are not synced), and
// their loops are resumed as before.
type endFiles struct{ files *runFiles }

// endFile is an end on disk.
type endFile struct {
	WorkflowID string          `json:"workflow_id"`
	RunID      string          `json:"run_id"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *endError       `json:"error,omitempty"`
}

// endError is a loop's failure on disk: an ApplicationError without
// details (the loops' failures are).
type endError struct {
	Message      string `json:"message"`
	Type         string `json:"type"`
	NonRetryable bool   `json:"non_retryable"`
}

// errNotKept is an end that cannot be kept on disk: it stays in memory.
var errNotKept = errors.New("this end cannot be kept on disk")

// newEndFiles opens the folder dir; nil (memory only) when dir is "".
func newEndFiles(dir string) (*endFiles, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := openRunFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("hosting: open the loop ends folder: %w", err)
	}
	return &endFiles{files: files}, nil
}

// put writes a run's end.
func (f *endFiles) put(key loopKey, result any, err error) error {
	file := endFile{WorkflowID: key.workflowID, RunID: key.runID}
	if err != nil {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.HasDetails() {
			return errNotKept
		}
		file.Error = &endError{Message: appErr.Message(), Type: appErr.Type(), NonRetryable: appErr.NonRetryable()}
	}
	if result != nil {
		raw, merr := json.Marshal(result)
		if merr != nil {
			return fmt.Errorf("encode a loop's end: %w", merr)
		}
		file.Result = raw
	}
	if werr := f.files.write(key, file); werr != nil {
		return fmt.Errorf("keep a loop's end: %w", werr)
	}
	return nil
}

// get reads a run's end: its result as the JSON the loop gave (Temporal's
// JSON payload converter carries it as it was), its failure as an
// ApplicationError of the same message and type.
func (f *endFiles) get(key loopKey) (unrecordedEnd, bool) {
	var file endFile
	if !f.files.read(key, &file) || file.WorkflowID != key.workflowID || file.RunID != key.runID {
		return unrecordedEnd{}, false
	}
	end := unrecordedEnd{at: time.Now()}
	if len(file.Result) > 0 {
		end.result = file.Result
	}
	if e := file.Error; e != nil {
		end.err = temporal.NewApplicationErrorWithOptions(e.Message, e.Type, temporal.ApplicationErrorOptions{NonRetryable: e.NonRetryable})
	}
	return end, true
}

// remove forgets a run's end: Temporal recorded it.
func (f *endFiles) remove(key loopKey) { f.files.remove(key) }

// prune removes the ends written before now - endFileTTL whose run
// running does not report (the sweep's list of the host's running waits,
// which trails by seconds, never by endFileTTL), unreadable ones as old,
// and temporary files a kill left behind.
func (f *endFiles) prune(now time.Time, running func(loopKey) bool) {
	f.files.prune(now, endFileTTL, func(body []byte) bool {
		var file endFile
		return json.Unmarshal(body, &file) == nil && running(loopKey{file.WorkflowID, file.RunID})
	})
}
