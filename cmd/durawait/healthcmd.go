package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"
)

// healthCommand is the setup of `durawait health`: one GET of a running
// durawait's /healthz (or /readyz), for a container's HEALTHCHECK or an
// exec probe where the image has no shell or curl (the distroless front).
// It exits 0 when the answer is 200, and 1 otherwise, printing it.
func healthCommand(fs *flag.FlagSet) action {
	base := fs.String("url", "http://127.0.0.1:8765", "the durawait HTTP listener to ask (its http address)")
	ready := fs.Bool("ready", false, "ask /readyz (can it serve: Temporal and workers) instead of /healthz (is it up)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	return func(ctx context.Context, inv invocation) error {
		path := "/healthz"
		if *ready {
			path = "/readyz"
		}
		url := strings.TrimSuffix(*base, "/") + path
		if u, err := neturl.Parse(url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErrorf("--url: %q is not an http(s) URL of a durawait listener", *base)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		resp, err := probe(ctx, url)
		if err != nil {
			return fmt.Errorf("%s: %w", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(inv.stdout, "%s %d %s\n", url, resp.StatusCode, strings.TrimSpace(string(body)))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %d", url, resp.StatusCode)
		}
		return nil
	}
}
