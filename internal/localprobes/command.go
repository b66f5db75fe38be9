package localprobes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/durawait/durawait/internal/childenv"
)

// commandOutputBytes bounds the output run_command returns (its last
// bytes: where a command says how it ended).
const commandOutputBytes = DefaultReadBytes

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	n   int
	buf []byte
	cut int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.cut += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (p *Probes) runCommand(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return answer(p.runCommandText(ctx, req))
}

func (p *Probes) runCommandText(ctx context.Context, req mcp.CallToolRequest) (string, error) {
	name, err := stringArg(req, "name", "", true)
	if err != nil {
		return "", err
	}
	argv, ok := p.policy.Commands[name]
	if !ok || len(argv) == 0 {
		return "", &RefusedError{Field: "name", Reason: fmt.Sprintf("%q is not a command local.commands allows (allowed: %s)", name, strings.Join(p.commandNames(), ", "))}
	}
	parent := ctx
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// A fixed folder, whichever process or session started durawait.
	cmd.Dir = "/"
	// Its environment is the minimal one of every child durawait starts.
	cmd.Env = childenv.Build(os.Environ(), childenv.Inherit{}, nil)
	// Its own process group, killed whole at the timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &tailBuffer{n: commandOutputBytes}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	var b bytes.Buffer
	var exitErr *exec.ExitError
	switch {
	case parent.Err() != nil:
		return "", fmt.Errorf("name: command %q stopped: the call ended (%w)", name, parent.Err())
	case ctx.Err() != nil:
		fmt.Fprintf(&b, "exit: timeout (killed after %s)\n", p.policy.timeout())
	case errors.As(err, &exitErr):
		fmt.Fprintf(&b, "exit: %d\n", exitErr.ExitCode())
	case err != nil:
		return "", fmt.Errorf("name: command %q (%s) did not run: %w", name, argv[0], err)
	default:
		b.WriteString("exit: 0\n")
	}
	if out.cut > 0 {
		fmt.Fprintf(&b, "(the first %d bytes of output cut)\n", out.cut)
	}
	b.Write(out.buf)
	return validText(b.Bytes()), nil
}
