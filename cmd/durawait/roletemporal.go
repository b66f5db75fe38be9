package main

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/durawait/durawait/internal/enginecreds"
	"github.com/durawait/durawait/internal/namespace"
	"github.com/durawait/durawait/mcpfront"
	"github.com/durawait/durawait/workflows"
)

// temporalTarget is the Temporal a process connects to: a cluster's
// frontend (--temporal), or the embedded engine with the data dir's
// credentials, which its client presents.
type temporalTarget struct {
	addr  string
	creds enginecreds.Files
}

// dialTemporal connects the process's Temporal client to p.target and
// fills p.temporal.
func (p *process) dialTemporal(ctx context.Context) (func(), error) {
	if p.target.addr == "" {
		return nil, needs("dialTemporal", "a Temporal address (startEngine's, or --temporal)")
	}
	opts, err := p.cfg.Connection.ClientOptions()
	if err != nil {
		return nil, err
	}
	opts.HostPort = p.target.addr
	opts.Namespace = p.cfg.Namespace
	if p.roles.engine {
		// The embedded engine lets in only the data dir's certificate.
		if opts.ConnectionOptions.TLS, err = p.target.creds.ClientTLS(); err != nil {
			return nil, fmt.Errorf("connect to the embedded engine: %w", err)
		}
	}
	opts.Logger = sdklog.NewStructuredLogger(p.logger.With("component", "temporal-sdk"))
	// Tells the front end whether a call started its wait or attached.
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(mcpfront.StartReporter))
	tc, err := client.DialContext(ctx, p.instrumented(opts))
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s%s: %w", p.target.addr, p.connectionNote(), err)
	}
	p.temporal = tc
	if !p.roles.engine {
		c := p.cfg.Connection
		p.logger.Info("connected to Temporal", "addr", c.Address(), "namespace", c.Namespace(), "tls", c.TLS(), "api_key", c.APIKey(),
			"addr_from", c.Sources["address"], "namespace_from", c.Sources["namespace"], "tls_from", c.Sources["tls"], "api_key_from", c.Sources["api_key"])
	}
	return tc.Close, nil
}

// connectionNote says, for an error, how the process connects to a
// cluster: with or without TLS and an API key, and where the address came
// from.
func (p *process) connectionNote() string {
	if p.roles.engine {
		return ""
	}
	c := p.cfg.Connection
	note := " (address from " + c.Sources["address"]
	switch {
	case c.TLS() && c.APIKey():
		note += "; TLS and API key"
	case c.TLS():
		note += "; TLS"
	default:
		note += "; plain gRPC, no TLS"
	}
	return note + ")"
}

// prepareNamespaceTimeout bounds the namespace's preparation at start-up.
const prepareNamespaceTimeout = 30 * time.Second

// prepareNamespace makes sure the namespace has durawait's search
// attributes before any worker or front end uses them (a workflow that
// upserts an unregistered one stalls). On the embedded engine it registers
// the missing ones (a data dir of an earlier release has none) and sets the
// retention of closed waits (retention_hours); on a cluster it only checks,
// and refuses to start with the exact `temporal operator search-attribute
// create` lines for what is missing. It fills nothing.
func (p *process) prepareNamespace(ctx context.Context) (func(), error) {
	if p.temporal == nil {
		return nil, needs("prepareNamespace", "dialTemporal's client")
	}
	ctx, cancel := context.WithTimeout(ctx, prepareNamespaceTimeout)
	defer cancel()
	services := namespace.Services{Operator: p.temporal.OperatorService(), Workflow: p.temporal.WorkflowService()}
	if !p.roles.engine {
		if err := namespace.CheckCluster(ctx, services, namespace.ClusterCheck{
			Namespace: p.cfg.Namespace, SearchAttributes: workflows.SearchAttributes(), Names: workflows.SearchAttributeNames,
			Connect: p.cfg.Connection.CLIFlags(), Retention: p.cfg.Retention(),
		}); err != nil {
			return nil, fmt.Errorf("Temporal at %s%s: %w", p.target.addr, p.connectionNote(), err)
		}
		return nil, nil
	}
	if err := namespace.PrepareEmbedded(ctx, services, namespace.EmbeddedOptions{
		Namespace: p.cfg.Namespace, SearchAttributes: workflows.SearchAttributes(),
		Names: workflows.SearchAttributeNames, Retired: workflows.RetiredSearchAttributes, Retention: p.cfg.Retention(),
	}); err != nil {
		return nil, fmt.Errorf("embedded engine: %w", err)
	}
	return nil, nil
}
