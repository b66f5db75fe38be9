package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Services whose port may be in use.
const (
	ServiceFrontend = "engine"
	ServiceUI       = "ui"
)

// DevServerPort is the Temporal CLI dev server's frontend port; a busy UI
// port is often that server's Web UI.
const DevServerPort = 7233

// PortInUseError says that a port the engine must listen on is taken, and
// whether a Temporal server answers on it (or, for the UI port, on the dev
// server's frontend port), which durawait could use instead.
type PortInUseError struct {
	// Service is ServiceFrontend or ServiceUI.
	Service string
	// Addr is the busy address.
	Addr string
	// Temporal is the address of a Temporal frontend found there, or "".
	Temporal string
	// TemporalTLS says that frontend answered over TLS only (another
	// durawait's embedded engine, or a cluster with TLS): reaching it
	// takes its credentials.
	TemporalTLS bool
	Err         error
}

func (e *PortInUseError) Error() string {
	msg := fmt.Sprintf("the embedded Temporal engine's port %s is in use", e.Addr)
	if e.Service == ServiceUI {
		msg = fmt.Sprintf("the Temporal Web UI's port %s is in use", e.Addr)
	}
	if e.Temporal != "" {
		msg += fmt.Sprintf(" (a Temporal server answers at %s)", e.Temporal)
	}
	return msg
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// checkPorts fails with a *PortInUseError when the frontend or UI port of
// opts is taken. The Temporal server opens its listeners itself, from its
// config, so the ports are tried and released just before it starts:
// checking here turns a conflict into a clear error instead of a failure
// deep inside the server.
func checkPorts(opts Options) error {
	check := func(service string, port int) error {
		addr := net.JoinHostPort(opts.IP, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		e := &PortInUseError{Service: service, Addr: addr, Err: err}
		probe := addr
		if service == ServiceUI {
			probe = net.JoinHostPort(opts.IP, strconv.Itoa(DevServerPort))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if found, overTLS := findTemporal(ctx, probe); found {
			e.Temporal, e.TemporalTLS = probe, overTLS
		}
		return e
	}
	if opts.Port != 0 {
		if err := check(ServiceFrontend, opts.Port); err != nil {
			return err
		}
	}
	if opts.UIPort > 0 {
		if err := check(ServiceUI, opts.UIPort); err != nil {
			return err
		}
	}
	return nil
}

// findTemporal reports whether a Temporal frontend answers GetSystemInfo
// at addr before ctx ends, over plain gRPC or TLS (another durawait's
// engine: GetSystemInfo needs no credential there), and whether it
// answered over TLS only. The server's certificate is not checked: the
// answer only names what holds the port.
func findTemporal(ctx context.Context, addr string) (found, overTLS bool) {
	for i, creds := range []credentials.TransportCredentials{
		insecure.NewCredentials(),
		credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}), //nolint:gosec // identification only
	} {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			continue
		}
		_, err = workflowservice.NewWorkflowServiceClient(conn).GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
		conn.Close()
		if err == nil {
			return true, i == 1
		}
	}
	return false, false
}

// AsPortInUse returns err's *PortInUseError, if any.
func AsPortInUse(err error) (*PortInUseError, bool) {
	var e *PortInUseError
	ok := errors.As(err, &e)
	return e, ok
}
