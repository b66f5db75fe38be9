package config

import (
	"errors"
	"path/filepath"
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
