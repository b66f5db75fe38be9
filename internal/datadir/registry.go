package datadir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// The registry: each process that takes a data dir notes it in a folder
// of the user's, so that `durawait status` finds every durawait the user
// runs, whichever config, flags or environment started it. The folder is
// found from the user database's home, not from $HOME or $XDG_STATE_HOME:
// MCP clients filter the environment of the servers they start, so a
// daemon and the shell that looks for it may not see the same variables.
// An entry of a process that died stays behind until a reader finds its
// data dir free and removes it.

// RegistryEnv overrides the registry's folder (tests, and a machine
// whose users have no home).
const RegistryEnv = "DURAWAIT_REGISTRY_DIR"

// RegistryDir is the registry's folder:
// <home>/.local/state/durawait/running, or $DURAWAIT_REGISTRY_DIR. The
// home is the user database's (/etc/passwd); a user it has no entry for
// (a container's arbitrary uid) falls back to $HOME.
func RegistryDir() (string, error) {
	if dir := os.Getenv(RegistryEnv); filepath.IsAbs(dir) {
		return dir, nil
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("find the user's home: %w", err)
	}
	if !filepath.IsAbs(u.HomeDir) {
		return "", fmt.Errorf("the user's home %q is not an absolute path", u.HomeDir)
	}
	return filepath.Join(u.HomeDir, ".local", "state", "durawait", "running"), nil
}

// entryName names dir's entry in the registry.
func entryName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:8])
}

// register notes dir in the registry (best effort: a registry that
// cannot be written only hides dir from a flagless status).
func register(dir string) {
	reg, err := RegistryDir()
	if err != nil {
		return
	}
	if err := os.MkdirAll(reg, 0o700); err != nil {
		return
	}
	_ = writeFileAtomic(filepath.Join(reg, entryName(dir)), []byte(dir+"\n"))
}

// writeFileAtomic writes content to path through a temporary file.
func writeFileAtomic(path string, content []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Instance is a running durawait the registry knows: the data dir it
// holds, and its owner record.
type Instance struct {
	Dir   string
	Owner Owner
}

// ownDir reports whether dir exists and belongs to this process's user.
func ownDir(dir string) bool {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true // gone: its entry is removed below
	}
	if err != nil {
		return false // out of this user's reach (another user's home)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

// Running lists the durawaits the user runs (data dirs of other users are
// skipped), oldest first, and removes the
// entries of those that are gone.
func Running() ([]Instance, error) {
	reg, err := RegistryDir()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(reg)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", reg, err)
	}
	var out []Instance
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		path := filepath.Join(reg, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		dir := strings.TrimSpace(string(b))
		if !ownDir(dir) {
			// Another user's data dir, in a registry folder others can
			// write (DURAWAIT_REGISTRY_DIR on a shared path): not ours to
			// list, nor to remove.
			continue
		}
		owner, held, err := Inspect(dir)
		if err != nil || !held || entryName(dir) != e.Name() {
			// Unless a new owner of dir noted it again meanwhile.
			if again, err := os.ReadFile(path); err == nil && string(again) == string(b) {
				if _, held, _ := Inspect(dir); !held {
					_ = os.Remove(path)
				}
			}
			continue
		}
		out = append(out, Instance{Dir: dir, Owner: owner})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner.StartedAt.Before(out[j].Owner.StartedAt) })
	return out, nil
}
