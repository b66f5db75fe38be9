package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
)

// StateDir is durawait's default data dir, the user's state directory:
// $XDG_STATE_HOME/durawait, else $HOME/.local/state/durawait. getenv looks
// up an environment variable (os.Getenv in production). It is an error when
// neither variable is set to an absolute path.
func StateDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		// The XDG spec says to ignore a relative path.
		return filepath.Join(x, "durawait"), nil
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "durawait"), nil
	}
	return "", errors.New("no state directory: neither XDG_STATE_HOME nor HOME is an absolute path; set data_dir")
}

// configDataDir is the default data dir of a config file that sets none:
// a folder of the state dir named after the file and a hash of its
// absolute path. So every process started with the same file (stdio
// sessions, a foreground serve, status and stop) meets on one data dir and
// one daemon, while two projects' configs never share one: a session of
// one project never reaches the other's downstream servers.
func configDataDir(stateDir, configPath string) string {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		abs = configPath
	}
	sum := sha256.Sum256([]byte(abs))
	name := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	return filepath.Join(stateDir, "configs", name+"-"+hex.EncodeToString(sum[:4]))
}
