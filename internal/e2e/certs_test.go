package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testPKI is a throwaway certificate authority and the certificates it
// signed, each written as PEM files into one folder.
type testPKI struct {
	t      testing.TB
	dir    string
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	// CAFile is the CA's certificate: what clients trust for the server and
	// the server trusts for clients.
	CAFile string
	serial int64
}

// certPair names a certificate's PEM file and its key's.
type certPair struct {
	CertFile, KeyFile string
}

// newTestPKI creates a CA (valid for a day) in dir.
func newTestPKI(t testing.TB, dir string) *testPKI {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "durawait e2e CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &testPKI{t: t, dir: dir, caCert: cert, caKey: key, serial: 1}
	p.CAFile = p.writePEM("ca.pem", "CERTIFICATE", der)
	return p
}

// serverCert issues the certificate of a server reached as localhost or
// 127.0.0.1. It may act as a client too: Temporal's services present it
// when they call their own frontend.
func (p *testPKI) serverCert(name string) certPair {
	p.t.Helper()
	return p.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	})
}

// clientCert issues a client certificate for commonName.
func (p *testPKI) clientCert(name, commonName string) certPair {
	p.t.Helper()
	return p.issue(name, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *testPKI) issue(name string, tmpl *x509.Certificate) certPair {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(p.t, err)
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	require.NoError(p.t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(p.t, err)
	return certPair{
		CertFile: p.writePEM(name+".pem", "CERTIFICATE", der),
		KeyFile:  p.writePEM(name+"-key.pem", "PRIVATE KEY", keyDER),
	}
}

func (p *testPKI) writePEM(name, blockType string, der []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	// World-readable: the Temporal server may run as another user.
	require.NoError(p.t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o644))
	return path
}

// serverOnlyTLS is the TLS configuration of a client that trusts the test
// CA and presents no certificate.
func (p *testPKI) serverOnlyTLS(serverName string) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	return &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// clientTLS is the TLS configuration of a client presenting pair and
// trusting only the test CA, for a server named serverName.
func (p *testPKI) clientTLS(pair certPair, serverName string) *tls.Config {
	p.t.Helper()
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	require.NoError(p.t, err)
	roots := x509.NewCertPool()
	roots.AddCert(p.caCert)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
}
