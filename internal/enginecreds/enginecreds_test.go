package enginecreds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A data dir's credentials are made once, private to its owner, and kept
// across starts; the server certificate names the engine's IPs and
// localhost, and the client certificate is signed by the data dir's
// authority.
func TestEnsureMakesPrivateCredentialsOnceAndKeepsThem(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	f, err := Ensure(dir, []string{"127.0.0.1"}, now)
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, Folder))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the credentials' folder")
	for _, p := range []string{f.CA, f.ServerCert, f.ServerKey, f.ClientCert, f.ClientKey} {
		info, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), p)
	}
	entries, err := os.ReadDir(filepath.Join(dir, Folder))
	require.NoError(t, err)
	assert.Len(t, entries, 5, "no temporary file left behind")

	server, err := readCert(f.ServerCert)
	require.NoError(t, err)
	assert.Contains(t, server.DNSNames, "localhost")
	assert.NoError(t, server.VerifyHostname("127.0.0.1"))
	ca, err := readCert(f.CA)
	require.NoError(t, err)
	client, err := readCert(f.ClientCert)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	_, err = client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "the client certificate is the authority's")

	before, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	_, err = Ensure(dir, []string{"127.0.0.1"}, now.Add(time.Hour))
	require.NoError(t, err)
	after, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	assert.Equal(t, before, after, "valid credentials are kept (a split worker keeps its connection)")
}

// Credentials are made again when a file is missing, a certificate ends
// within 30 days, or the engine listens on an IP the certificate lacks.
func TestEnsureRemakesCredentialsThatNoLongerServe(t *testing.T) {
	now := time.Now()
	for name, change := range map[string]func(t *testing.T, dir string, f Files) (ips []string, at time.Time){
		"a key is missing": func(t *testing.T, _ string, f Files) ([]string, time.Time) {
			require.NoError(t, os.Remove(f.ClientKey))
			return nil, now
		},
		"they end within 30 days": func(*testing.T, string, Files) ([]string, time.Time) {
			return nil, now.Add(validity - 29*24*time.Hour)
		},
		"the engine listens on another IP": func(*testing.T, string, Files) ([]string, time.Time) {
			return []string{"127.0.0.2"}, now
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := Ensure(dir, nil, now)
			require.NoError(t, err)
			before, err := os.ReadFile(f.CA)
			require.NoError(t, err)
			ips, at := change(t, dir, f)
			_, err = Ensure(dir, ips, at)
			require.NoError(t, err)
			after, err := os.ReadFile(f.CA)
			require.NoError(t, err)
			assert.NotEqual(t, before, after, "a new authority")
			_, err = f.ClientTLS()
			assert.NoError(t, err)
			for _, ip := range ips {
				server, err := readCert(f.ServerCert)
				require.NoError(t, err)
				assert.NoError(t, server.VerifyHostname(ip))
			}
		})
	}
}

// A client that cannot read the data dir is told whose credentials they
// are.
func TestClientTLSNamesWhyItCannotRead(t *testing.T) {
	_, err := FilesIn(t.TempDir()).ClientTLS()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the embedded engine's credentials are missing")
}

// The two sides fit: a TLS handshake with the client's configuration
// against the server's succeeds, and one with a certificate of another
// data dir fails.
func TestClientAndServerConfigurationsFit(t *testing.T) {
	f, err := Ensure(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	other, err := Ensure(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	server, err := f.ServerTLS(tls.RequireAndVerifyClientCert)
	require.NoError(t, err)
	good, err := f.ClientTLS()
	require.NoError(t, err)
	stranger, err := other.ClientTLS()
	require.NoError(t, err)
	stranger.RootCAs = good.RootCAs // trusts the server; presents its own data dir's certificate

	assert.NoError(t, handshake(t, server, good))
	assert.Error(t, handshake(t, server, stranger), "a certificate of another data dir")
}

// handshake runs one TLS handshake over a loopback connection.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		done <- c.(*tls.Conn).Handshake()
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err == nil {
		// TLS 1.3: the server's verdict on the client's certificate
		// arrives with the first read.
		// A server that accepted it closes the connection: EOF.
		if _, err = c.Read(make([]byte, 1)); errors.Is(err, io.EOF) {
			err = nil
		}
		c.Close()
	}
	if serverErr := <-done; serverErr != nil {
		return serverErr
	}
	return err
}

// A credentials file that exists but cannot be read is an error, not a
// reason to make new ones (which would lock out every client holding the
// current ones); files an earlier start left readable are made private.
func TestEnsureKeepsWhatItCannotReadAndPrivatesWhatItKeeps(t *testing.T) {
	dir := t.TempDir()
	f, err := Ensure(dir, nil, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.Chmod(f.ClientCert, 0o644))
	require.NoError(t, os.Chmod(filepath.Dir(f.CA), 0o755))
	_, err = Ensure(dir, nil, time.Now())
	require.NoError(t, err)
	info, err := os.Stat(f.ClientCert)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	info, err = os.Stat(filepath.Dir(f.CA))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())

	// A folder in the file's place: exists, and reading it fails.
	require.NoError(t, os.Remove(f.ServerKey))
	require.NoError(t, os.Mkdir(f.ServerKey, 0o700))
	before, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	_, err = Ensure(dir, nil, time.Now())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "remove the folder to make new ones")
	after, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing was made anew")
}
