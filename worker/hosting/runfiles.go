package hosting

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// runFiles is a folder of small JSON files, one per workflow run, each
// written whole (a temporary file renamed), not synced: a kill of the
// process loses nothing the kernel holds; a crash of the machine may lose
// the last writes. The host's loop ends (endFiles) and its journal of
// running loops (loopJournal) are kept in one each.
type runFiles struct{ dir string }

// tmpFileTTL is how old a temporary file must be before it is taken for a
// kill's leftover: a younger one may be a write under way.
const tmpFileTTL = time.Minute

// openRunFiles makes the folder dir (0700) and rids it of a kill's
// leftover temporary files.
func openRunFiles(dir string) (*runFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hosting: make the folder %s: %w", dir, err)
	}
	f := &runFiles{dir: dir}
	f.prune(time.Now(), 0, func([]byte) bool { return true })
	return f, nil
}

// path is the file of a run.
func (f *runFiles) path(key loopKey) string {
	sum := sha256.Sum256([]byte(key.workflowID + "\x00" + key.runID))
	return filepath.Join(f.dir, hex.EncodeToString(sum[:16])+".json")
}

// write writes v as the file of a run.
func (f *runFiles) write(key loopKey, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	path := f.path(key)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// read decodes the file of a run into v; false when there is none or it
// cannot be read.
func (f *runFiles) read(key loopKey, v any) bool {
	body, err := os.ReadFile(f.path(key))
	return err == nil && json.Unmarshal(body, v) == nil
}

// remove removes the file of a run.
func (f *runFiles) remove(key loopKey) {
	_ = os.Remove(f.path(key))
}

// each calls fn with the body of every file (not the temporary ones).
func (f *runFiles) each(fn func(body []byte)) error {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("hosting: read the folder %s: %w", f.dir, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if body, err := os.ReadFile(filepath.Join(f.dir, e.Name())); err == nil {
			fn(body)
		}
	}
	return nil
}

// prune removes the files written before now - ttl that keep does not
// keep, and the temporary files older than tmpFileTTL.
func (f *runFiles) prune(now time.Time, ttl time.Duration, keep func(body []byte) bool) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			continue // a folder of its own (the journal's expected loops)
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		path := filepath.Join(f.dir, e.Name())
		age := now.Sub(info.ModTime())
		switch {
		case strings.HasSuffix(e.Name(), ".tmp"):
			if age >= tmpFileTTL {
				_ = os.Remove(path)
			}
		case ttl > 0 && age >= ttl:
			if body, err := os.ReadFile(path); err != nil || !keep(body) {
				_ = os.Remove(path)
			}
		}
	}
}
