package localprobes

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func defaultLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// maxRedirects bounds the redirects http_request follows (each checked
// against the policy as the first request is).
const maxRedirects = 5

// dial connects to addr (host:port) after checking every address it
// resolves to against the policy, and connects to the checked address
// itself: a name that resolves again to another address (DNS rebinding)
// cannot slip past the check. field names the argument for a refusal.
func (p *Probes) dial(ctx context.Context, field, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip, err := p.policy.resolveHost(func(h string) ([]netip.Addr, error) { return p.lookup(ctx, h) }, field, host)
	if err != nil {
		return nil, err
	}
	return p.dialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
}

func (p *Probes) tcpConnect(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return answer(p.tcpConnectText(ctx, req))
}

func (p *Probes) tcpConnectText(ctx context.Context, req mcp.CallToolRequest) (string, error) {
	host, err := stringArg(req, "host", "127.0.0.1", false)
	if err != nil {
		return "", err
	}
	if host == "" {
		return "", argError("host", "must not be empty")
	}
	port, err := intArg(req, "port", 0, 1, 65535)
	if err != nil {
		return "", err
	}
	if port == 0 {
		return "", argError("port", "is required")
	}
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	target := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := p.dial(ctx, "host", target)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return "", err
	case err != nil:
		return fmt.Sprintf("closed %s: %s", target, dialReason(err)), nil
	}
	conn.Close()
	return "open " + target, nil
}

// dialReason is the short cause of a failed connection.
func dialReason(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		err = opErr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

func (p *Probes) httpRequest(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return answer(p.httpRequestText(ctx, req))
}

func (p *Probes) httpRequestText(ctx context.Context, req mcp.CallToolRequest) (string, error) {
	raw, err := stringArg(req, "url", "", true)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", argError("url", "must be an http:// or https:// URL with a host, got %q", raw)
	}
	if u.User != nil {
		return "", argError("url", "must not carry credentials (user:password@)")
	}
	method, err := stringArg(req, "method", http.MethodGet, false)
	if err != nil {
		return "", err
	}
	if err := oneOf("method", method, http.MethodGet, http.MethodHead); err != nil {
		return "", err
	}
	limit, err := intArg(req, "max_bytes", DefaultReadBytes, 1, MaxReadBytes)
	if err != nil {
		return "", err
	}
	insecure := req.GetBool("insecure_tls", false)

	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	// The dial runs on the transport's goroutine.
	var refusal atomic.Pointer[RefusedError]
	transport := &http.Transport{
		// Never through a proxy: a proxy would reach what the policy
		// refuses.
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			conn, err := p.dial(ctx, "url", addr)
			var refused *RefusedError
			if errors.As(err, &refused) {
				refusal.Store(refused)
			}
			return conn, err
		},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: insecure}, //nolint:gosec // the caller's choice, for a local dev server
		DisableKeepAlives: true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		return nil
	}}
	httpReq, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return "", argError("url", "%v", err)
	}
	httpReq.Header.Set("User-Agent", "durawait-local-probe")
	resp, err := client.Do(httpReq)
	if refused := refusal.Load(); refused != nil {
		return "", refused
	}
	if err != nil {
		return "no response: " + httpReason(err), nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	cut := len(body) > limit
	if cut {
		body = body[:limit]
	}
	return formatResponse(resp, body, cut), nil
}

// clip bounds s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// httpReason is the short cause of a request that got no response.
func httpReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return dialReason(err)
}

// formatResponse writes a response as a probe's text: the status line,
// the headers sorted by name, a blank line and the body (as text).
func formatResponse(resp *http.Response, body []byte, cut bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		if i == maxHeaders {
			fmt.Fprintf(&b, "(%d more headers)\n", len(names)-maxHeaders)
			break
		}
		value := strings.Join(resp.Header[name], ", ")
		fmt.Fprintf(&b, "%s: %s\n", validText([]byte(clip(name, maxHeaderNameBytes))), validText([]byte(clip(value, maxHeaderBytes))))
	}
	b.WriteString("\n")
	b.WriteString(validText(body))
	if cut {
		fmt.Fprintf(&b, "\n(body cut at %d bytes)", len(body))
	}
	return b.String()
}
