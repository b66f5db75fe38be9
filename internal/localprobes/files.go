package localprobes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func (p *Probes) fileStat(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return answer(p.fileStatText(req))
}

func (p *Probes) fileStatText(req mcp.CallToolRequest) (string, error) {
	path, err := stringArg(req, "path", "", true)
	if err != nil {
		return "", err
	}
	f, err := p.policy.openPath("path", path)
	if errors.Is(err, fs.ErrNotExist) {
		return "exists: false", nil
	}
	if err != nil {
		return "", pathError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	return fmt.Sprintf("exists: true\ntype: %s\nsize: %d\nmode: %s\nmtime: %s",
		fileType(fi.Mode()), fi.Size(), fi.Mode().Perm(), fi.ModTime().UTC().Format(time.RFC3339Nano)), nil
}

// pathError names the argument of an error that does not already.
func pathError(err error) error {
	var refused *RefusedError
	if errors.As(err, &refused) {
		return err
	}
	return fmt.Errorf("path: %w", err)
}

// fileType names a file's type.
func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

func (p *Probes) fileRead(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return answer(p.fileReadText(req))
}

func (p *Probes) fileReadText(req mcp.CallToolRequest) (string, error) {
	path, err := stringArg(req, "path", "", true)
	if err != nil {
		return "", err
	}
	limit, err := intArg(req, "max_bytes", DefaultReadBytes, 1, MaxReadBytes)
	if err != nil {
		return "", err
	}
	from, err := stringArg(req, "from", "tail", false)
	if err != nil {
		return "", err
	}
	if err := oneOf("from", from, "head", "tail"); err != nil {
		return "", err
	}
	f, err := p.policy.openPath("path", path)
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file: " + path, nil
	}
	if err != nil {
		return "", pathError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", argError("path", "%q is a %s, not a regular file (file_stat tells whether it exists)", path, fileType(fi.Mode()))
	}
	if from == "tail" && fi.Size() > int64(limit) {
		if _, err := f.Seek(fi.Size()-int64(limit), io.SeekStart); err != nil {
			return "", fmt.Errorf("path: %w", err)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
	if err != nil {
		return "", fmt.Errorf("path: %w", err)
	}
	return validText(b), nil
}
