// Package enginecreds keeps the credentials of a data dir's embedded
// Temporal engine: a certificate authority made for that data dir alone, a
// server certificate for the engine's listeners and one client certificate
// for the processes that may drive it (durawait's own roles, `durawait
// waits`, an operator's Temporal CLI). All of them are files in the data
// dir, private to its owner (a 0700 folder of 0600 files): whoever can read
// the data dir may drive the engine, and nobody else can (docs/security.md,
// "The engine").
//
// The package only makes and reads files; the engine (internal/engine)
// requires the certificates on its listeners, and clients present them.
package enginecreds

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Folder is the credentials' folder in a data dir.
const Folder = "engine-tls"

const (
	// validity is how long the certificates made are valid: a data dir
	// outlives any single start.
	validity = 10 * 365 * 24 * time.Hour
	// renewBefore is how long before their end certificates are made
	// again, at an engine's start.
	renewBefore = 30 * 24 * time.Hour
	// ServerName is a DNS name in the server certificate, besides the
	// engine's IPs and localhost.
	ServerName = "durawait-engine"
	// clientName is the client certificate's common name, the subject an
	// operator sees on the engine's side.
	clientName = "durawait"
)

// Files are the paths of a data dir's engine credentials.
type Files struct {
	// CA is the authority's certificate (PEM); its key is not kept.
	CA string
	// ServerCert and ServerKey are the engine's listeners' certificate
	// and key.
	ServerCert, ServerKey string
	// ClientCert and ClientKey are the certificate and key a client of
	// the engine presents.
	ClientCert, ClientKey string
}

// FilesIn are the credential paths of dataDir (existing or not).
func FilesIn(dataDir string) Files {
	dir := filepath.Join(dataDir, Folder)
	return Files{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
}

// Ensure returns dataDir's credentials, made anew when a file is missing
// or not a valid certificate or key, a certificate ends within 30 days of
// now, or the server certificate does not name every IP in ips; their
// folder and files are made private (0700, 0600) if they were not. A file
// that exists but cannot be read (permissions, I/O) is an error, not a
// reason for new credentials: those would lock out every client that
// holds the current ones (a split worker, an operator's Temporal CLI). Only
// the process that holds the data dir's lock (the engine's) calls it.
func Ensure(dataDir string, ips []string, now time.Time) (Files, error) {
	f := FilesIn(dataDir)
	if err := f.readable(); err != nil {
		return Files{}, fmt.Errorf("engine credentials in %s (fix it, or remove the folder to make new ones, which running clients must then read again): %w",
			filepath.Dir(f.CA), err)
	}
	if f.valid(ips, now) {
		return f, f.private()
	}
	if err := f.make(ips, now); err != nil {
		return Files{}, fmt.Errorf("engine credentials in %s: %w", filepath.Dir(f.CA), err)
	}
	return f, nil
}

// all are f's paths.
func (f Files) all() []string {
	return []string{f.CA, f.ServerCert, f.ServerKey, f.ClientCert, f.ClientKey}
}

// readable fails when a file exists but cannot be read; a missing one is
// fine (valid reports it).
func (f Files) readable() error {
	for _, p := range f.all() {
		if _, err := os.ReadFile(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// private makes the folder 0700 and the files 0600, whatever an earlier
// release or the umask made them.
func (f Files) private() error {
	for _, p := range append([]string{filepath.Dir(f.CA)}, f.all()...) {
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("engine credentials: %w", err)
		}
		if info.Mode().Perm()&0o077 == 0 {
			continue // private already: nothing to change (nor to fail on)
		}
		mode := os.FileMode(0o600)
		if info.IsDir() {
			mode = 0o700
		}
		if err := os.Chmod(p, mode); err != nil {
			return fmt.Errorf("engine credentials: make %s private (%#o): %w", p, mode, err)
		}
	}
	return nil
}

// valid reports whether f's files exist, load, and cover ips until 30 days
// from now.
func (f Files) valid(ips []string, now time.Time) bool {
	ca, err := readCert(f.CA)
	if err != nil || ca.NotAfter.Before(now.Add(renewBefore)) {
		return false
	}
	for _, pair := range [][2]string{{f.ServerCert, f.ServerKey}, {f.ClientCert, f.ClientKey}} {
		if _, err := tls.LoadX509KeyPair(pair[0], pair[1]); err != nil {
			return false
		}
		cert, err := readCert(pair[0])
		if err != nil || cert.NotAfter.Before(now.Add(renewBefore)) || cert.CheckSignatureFrom(ca) != nil {
			return false
		}
	}
	server, err := readCert(f.ServerCert)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(server.IPAddresses, func(have net.IP) bool { return have.Equal(net.ParseIP(ip)) }) {
			return false
		}
	}
	return true
}

// make writes a new authority and the two certificates signed by it. The
// authority's key is dropped once they are signed: certificates are only
// ever made again all together.
func (f Files) make(ips []string, now time.Time) error {
	if err := os.MkdirAll(filepath.Dir(f.CA), 0o700); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Dir(f.CA), 0o700); err != nil {
		return fmt.Errorf("make private (0700): %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTemplate := template(now, "durawait engine CA")
	caTemplate.IsCA, caTemplate.BasicConstraintsValid = true, true
	caTemplate.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("sign the authority: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}

	server := template(now, ServerName)
	server.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	server.DNSNames = []string{ServerName, "localhost"}
	for _, ip := range append([]string{"127.0.0.1", "::1"}, ips...) {
		if parsed := net.ParseIP(ip); parsed != nil && !slices.ContainsFunc(server.IPAddresses, parsed.Equal) {
			server.IPAddresses = append(server.IPAddresses, parsed)
		}
	}
	client := template(now, clientName)
	client.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}

	if err := writeKeyPair(f.ServerCert, f.ServerKey, server, ca, caKey); err != nil {
		return err
	}
	if err := writeKeyPair(f.ClientCert, f.ClientKey, client, ca, caKey); err != nil {
		return err
	}
	return writePrivate(f.CA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
}

// template is a certificate template valid from a minute before now.
func template(now time.Time, name string) *x509.Certificate {
	// crypto/rand.Reader does not fail (Go 1.24 and later).
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"durawait"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

// writeKeyPair signs tmpl with the authority and writes the certificate
// and a new key.
func writeKeyPair(certPath, keyPath string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("sign %s: %w", filepath.Base(certPath), err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePrivate(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return err
	}
	return writePrivate(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// writePrivate writes data to path (0600) through a file renamed into
// place, so a reader never sees half of it.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

// authority is a pool holding the data dir's CA.
func (f Files) authority() (*x509.CertPool, error) {
	ca, err := readCert(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}

// ClientTLS is the TLS configuration of a client of the engine: it trusts
// only the data dir's authority and presents the client certificate. An
// error says the files cannot be read: the caller is not the data dir's
// owner, or no engine ever ran there.
func (f Files) ClientTLS() (*tls.Config, error) {
	pool, err := f.authority()
	if err != nil {
		return nil, unreadable(err)
	}
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		return nil, unreadable(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ServerTLS is the TLS configuration of one of the engine's listeners: the
// server certificate, and client certificates checked against the data
// dir's authority as auth says (tls.RequireAndVerifyClientCert for the
// engine's internal services, tls.VerifyClientCertIfGiven for its frontend,
// where the Web UI's requests carry a bearer token instead).
func (f Files) ServerTLS(auth tls.ClientAuthType) (*tls.Config, error) {
	pool, err := f.authority()
	if err != nil {
		return nil, fmt.Errorf("the authority: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		return nil, fmt.Errorf("the server certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: auth, MinVersion: tls.VersionTLS12}, nil
}

// unreadable wraps err with what it means for the caller.
func unreadable(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("the embedded engine's credentials are the data dir owner's: %w", err)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the embedded engine's credentials are missing (has an engine run on this data dir?): %w", err)
	}
	return fmt.Errorf("the embedded engine's credentials: %w", err)
}
