package agentproc

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// punchHole frees the bytes [off, off+n) of the file at path on disk; the
// file keeps its length and those bytes read as zeros.
func punchHole(path string, off, n int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n); err != nil {
		return fmt.Errorf("punch a hole: %w", err)
	}
	return nil
}
