package localprobes

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Policy bounds what the built-in probes reach. The zero Policy reaches
// loopback addresses only: no other host, no file, no command.
type Policy struct {
	// Hosts are the hosts beyond loopback that http_request and
	// tcp_connect may reach: a name ("build.internal"), a wildcard name
	// ("*.internal": any name under it), an address or a CIDR prefix
	// ("10.0.0.0/8"). A link-local address (169.254.0.0/16, fe80::/10:
	// where clouds serve instance metadata) is refused whatever they say.
	Hosts []string
	// Paths are the absolute folders (or files) file_stat and file_read
	// may read, symbolic links resolved.
	Paths []string
	// Commands are the commands run_command may run, by name: each an
	// argument vector run as it is (no shell, no argument of the call).
	Commands map[string][]string
	// Deny are folders no file probe reads, whatever Paths says:
	// durawait's data dir (its engine credentials, the UI's login token,
	// the agents' spools).
	Deny []string
	// Timeout bounds one probe call (10 s when zero).
	Timeout time.Duration
}

// DefaultTimeout bounds a probe call when the policy sets no timeout.
const DefaultTimeout = 10 * time.Second

func (p Policy) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

// RefusedError is a target the policy does not allow: the probe answers
// it as an error result, which ends the wait (polling it again cannot
// help).
type RefusedError struct {
	// Field is the argument that named the target.
	Field string
	// Reason says which rule refused it.
	Reason string
}

func (e *RefusedError) Error() string { return e.Field + ": " + e.Reason }

// metadataAddrs are the clouds' instance metadata and host agent
// addresses outside the link-local ranges: AWS's IPv6 one, Alibaba's,
// Azure's wire server, Oracle's, and AWS's IPv4 one behind NAT64.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("64:ff9b::a9fe:a9fe"),
}

// checkAddr decides whether the address ip, which the host name resolved
// to (name is the address itself when given as one), may be reached.
func (p Policy) checkAddr(field, name string, ip netip.Addr) error {
	ip = ip.Unmap()
	switch {
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return &RefusedError{Field: field, Reason: fmt.Sprintf("%s is a link-local address (where clouds serve instance metadata): never reached", ip)}
	case contains(metadataAddrs, ip):
		return &RefusedError{Field: field, Reason: fmt.Sprintf("%s is a cloud's instance metadata address: never reached", ip)}
	case ip.IsUnspecified() || ip.IsMulticast():
		return &RefusedError{Field: field, Reason: fmt.Sprintf("%s is not a host's address", ip)}
	case ip.IsLoopback():
		return nil
	}
	for _, h := range p.Hosts {
		if prefix, err := netip.ParsePrefix(h); err == nil && prefix.Contains(ip) {
			return nil
		}
		if addr, err := netip.ParseAddr(h); err == nil && addr.Unmap() == ip {
			return nil
		}
		if hostMatches(h, name) {
			return nil
		}
	}
	what := name
	if name != ip.String() {
		what = fmt.Sprintf("%s (%s)", name, ip)
	}
	return &RefusedError{Field: field, Reason: fmt.Sprintf("%s is not a loopback address, and local.hosts does not list it", what)}
}

// hostMatches reports whether the pattern of local.hosts names host: the
// same name, or a name under "*.<domain>".
func hostMatches(pattern, host string) bool {
	pattern, host = strings.ToLower(strings.TrimSuffix(pattern, ".")), strings.ToLower(strings.TrimSuffix(host, "."))
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return pattern == host
}

func contains(addrs []netip.Addr, ip netip.Addr) bool {
	for _, a := range addrs {
		if a == ip {
			return true
		}
	}
	return false
}

// openPath opens path for reading (O_NONBLOCK: a FIFO does not hang the
// probe) under the folder of Paths that holds it, through an os.Root: a
// symbolic link is followed only while it stays inside that folder, and
// at the moment of the open, so nothing can swap a link in between a
// check and the open. The file opened must not lie in a Deny folder.
func (p Policy) openPath(field, path string) (*os.File, error) {
	if len(p.Paths) == 0 {
		return nil, &RefusedError{Field: field, Reason: "file probes are off: local.paths lists no folder they may read"}
	}
	if !filepath.IsAbs(path) {
		return nil, &RefusedError{Field: field, Reason: fmt.Sprintf("%q must be an absolute path", path)}
	}
	clean := filepath.Clean(path)
	for _, root := range p.Paths {
		realRoot, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue // a folder that does not exist holds nothing
		}
		rel, ok := relUnder(root, realRoot, clean)
		if !ok {
			continue
		}
		r, err := os.OpenRoot(realRoot)
		if err != nil {
			return nil, fmt.Errorf("%s: open %s: %w", field, root, err)
		}
		defer r.Close()
		f, err := r.OpenFile(rel, os.O_RDONLY|nonBlock, 0)
		switch {
		case err != nil && strings.Contains(err.Error(), "escapes"):
			return nil, &RefusedError{Field: field, Reason: fmt.Sprintf("%q leads outside %s by a symbolic link", path, root)}
		case err != nil:
			return nil, err
		}
		if denied := p.denied(f, clean); denied != "" {
			f.Close()
			return nil, &RefusedError{Field: field, Reason: fmt.Sprintf("%q is inside %s, durawait's own data: never read", path, denied)}
		}
		return f, nil
	}
	return nil, &RefusedError{Field: field, Reason: fmt.Sprintf("%q is outside every folder local.paths lists (%s)", path, strings.Join(p.Paths, ", "))}
}

// relUnder is path relative to the allowed folder root (as configured, or
// its links resolved: realRoot), and whether path lies under it.
func relUnder(root, realRoot, path string) (string, bool) {
	for _, r := range []string{filepath.Clean(root), realRoot} {
		if within(r, path) {
			rel, err := filepath.Rel(r, path)
			return rel, err == nil
		}
	}
	return "", false
}

// denied names the Deny folder the opened file f lies in ("" when none):
// where the file really is, as the kernel says (Linux), else its path
// with its links resolved.
func (p Policy) denied(f *os.File, path string) string {
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		if real, err = filepath.EvalSymlinks(path); err != nil {
			real = path
		}
	}
	for _, d := range p.Deny {
		realDeny, err := filepath.EvalSymlinks(d)
		if err != nil {
			realDeny = filepath.Clean(d)
		}
		if within(realDeny, real) || within(filepath.Clean(d), real) {
			return d
		}
	}
	return ""
}

// within reports whether path is root or lies under it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// checkName refuses a host name before it is looked up when no address
// it could resolve to may be reached: a name other than localhost when
// local.hosts lists neither it (or a wildcard over it) nor any address or
// prefix. So the probes send no DNS query the policy could not allow.
func (p Policy) checkName(field, host string) error {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return nil
	}
	for _, pattern := range p.Hosts {
		if _, err := netip.ParsePrefix(pattern); err == nil {
			return nil
		}
		if _, err := netip.ParseAddr(pattern); err == nil {
			return nil
		}
		if hostMatches(pattern, h) {
			return nil
		}
	}
	return &RefusedError{Field: field, Reason: fmt.Sprintf("%s is not localhost, and local.hosts does not list it", host)}
}

// resolveHost resolves host (a name or an address) and checks each of its
// addresses; it returns the first allowed one.
func (p Policy) resolveHost(lookup func(host string) ([]netip.Addr, error), field, host string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return ip, p.checkAddr(field, ip.String(), ip)
	}
	if err := p.checkName(field, host); err != nil {
		return netip.Addr{}, err
	}
	ips, err := lookup(host)
	if err != nil {
		return netip.Addr{}, err
	}
	var first error
	for _, ip := range ips {
		err := p.checkAddr(field, host, ip)
		if err == nil {
			return ip, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%s has no address", host)
	}
	return netip.Addr{}, first
}
