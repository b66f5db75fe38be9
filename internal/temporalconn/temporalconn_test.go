package temporalconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env is a fixed environment.
type env map[string]string

func (e env) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e env) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// pemFiles writes a self-signed certificate and its key as PEM files.
func pemFiles(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return cert, key
}

// profiles writes a Temporal config file (the CLI's TOML format).
func profiles(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "temporal.toml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func on() *bool  { b := true; return &b }
func off() *bool { b := false; return &b }

func TestNothingSetIsTheEmbeddedEngine(t *testing.T) {
	s, err := Resolve(Request{Env: env{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.toml")}})
	require.NoError(t, err)
	assert.Equal(t, "", s.Address())
	assert.Equal(t, "default", s.Namespace())
	assert.False(t, s.TLS())
	assert.False(t, s.APIKey())
}

// Each setting comes from the highest source that sets it: flags, then
// TEMPORAL_*, then durawait's file, then the Temporal profile.
func TestEachSettingComesFromTheHighestSourceThatSetsIt(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pemFiles(t, dir, "ca")
	cert, key := pemFiles(t, dir, "client")
	file := profiles(t, dir, `
[profile.default]
address = "profile:7233"
namespace = "profile-ns"
api_key = "profile-key"
[profile.default.tls]
server_name = "profile.example"
server_ca_cert_path = "`+ca+`"
`)
	for _, tc := range []struct {
		name                 string
		flags, toml          Layer
		env                  env
		addr, ns, serverName string
		addrFrom, nsFrom     string
		tlsFrom              string
	}{
		{name: "profile alone", addr: "profile:7233", ns: "profile-ns", serverName: "profile.example",
			addrFrom: `profile "default" of ` + file, nsFrom: `profile "default" of ` + file, tlsFrom: `profile "default" of ` + file},
		{name: "the file over the profile", toml: Layer{Address: "toml:7233", ServerName: "toml.example"},
			addr: "toml:7233", ns: "profile-ns", serverName: "toml.example", addrFrom: "durawait.toml", nsFrom: `profile "default" of ` + file, tlsFrom: "durawait.toml"},
		{name: "TEMPORAL_* over the file", toml: Layer{Address: "toml:7233", Namespace: "toml-ns"},
			env:  env{"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_TLS_SERVER_NAME": "env.example"},
			addr: "env:7233", ns: "toml-ns", serverName: "env.example", addrFrom: "TEMPORAL_ADDRESS", nsFrom: "durawait.toml", tlsFrom: "TEMPORAL_TLS_SERVER_NAME"},
		{name: "flags over everything", flags: Layer{Address: "flag:7233", Namespace: "flag-ns", ServerName: "flag.example"},
			toml: Layer{Address: "toml:7233", Namespace: "toml-ns"}, env: env{"TEMPORAL_ADDRESS": "env:7233", "TEMPORAL_NAMESPACE": "env-ns"},
			addr: "flag:7233", ns: "flag-ns", serverName: "flag.example", addrFrom: "flags", nsFrom: "flags", tlsFrom: "flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env{"TEMPORAL_CONFIG_FILE": file}
			for k, v := range tc.env {
				e[k] = v
			}
			s, err := Resolve(Request{Flags: tc.flags, File: tc.toml, FileName: "durawait.toml", Env: e})
			require.NoError(t, err)
			assert.Equal(t, tc.addr, s.Address())
			assert.Equal(t, tc.ns, s.Namespace())
			assert.Equal(t, tc.serverName, s.Profile.TLS.ServerName)
			assert.Equal(t, ca, s.Profile.TLS.ServerCACertPath, "a lower source's other TLS fields stay")
			assert.Equal(t, tc.addrFrom, s.Sources["address"])
			assert.Equal(t, tc.nsFrom, s.Sources["namespace"])
			assert.Equal(t, tc.tlsFrom, s.Sources["tls"])
			assert.True(t, s.TLS())
			opts, err := s.ClientOptions()
			require.NoError(t, err)
			assert.Equal(t, tc.addr, opts.HostPort)
			assert.Equal(t, tc.serverName, opts.ConnectionOptions.TLS.ServerName)
			assert.NotNil(t, opts.ConnectionOptions.TLS.RootCAs)
			assert.NotNil(t, opts.Credentials, "the profile's API key")
		})
	}

	// mTLS from the flags: the client certificate is loaded.
	s, err := Resolve(Request{Flags: Layer{ClientCertPath: cert, ClientKeyPath: key}, Env: env{"TEMPORAL_CONFIG_FILE": file}})
	require.NoError(t, err)
	opts, err := s.ClientOptions()
	require.NoError(t, err)
	assert.Len(t, opts.ConnectionOptions.TLS.Certificates, 1)
}

func TestProfilesAreChosenByFlagThenEnvironmentThenFile(t *testing.T) {
	file := profiles(t, t.TempDir(), `
[profile.a]
address = "a:7233"
[profile.b]
address = "b:7233"
[profile.c]
address = "c:7233"
`)
	s, err := Resolve(Request{Flags: Layer{Profile: "a"}, File: Layer{Profile: "c"}, Env: env{"TEMPORAL_PROFILE": "b", "TEMPORAL_CONFIG_FILE": file}})
	require.NoError(t, err)
	assert.Equal(t, "a:7233", s.Address())
	s, err = Resolve(Request{File: Layer{Profile: "c"}, Env: env{"TEMPORAL_PROFILE": "b", "TEMPORAL_CONFIG_FILE": file}})
	require.NoError(t, err)
	assert.Equal(t, "b:7233", s.Address())
	s, err = Resolve(Request{File: Layer{Profile: "c", ConfigFile: file}, Env: env{}})
	require.NoError(t, err)
	assert.Equal(t, "c:7233", s.Address())
	assert.Equal(t, `profile "c" of `+file, s.Sources["address"])
}

func TestAPIKeyTurnsTLSOnUnlessTurnedOff(t *testing.T) {
	none := env{"TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none.toml")}
	s, err := Resolve(Request{Flags: Layer{Address: "x:7233", APIKey: "k"}, Env: none})
	require.NoError(t, err)
	assert.True(t, s.TLS())
	opts, err := s.ClientOptions()
	require.NoError(t, err)
	assert.NotNil(t, opts.ConnectionOptions.TLS)
	assert.NotNil(t, opts.Credentials)

	s, err = Resolve(Request{Flags: Layer{Address: "x:7233", APIKey: "k", TLS: off()}, Env: none})
	require.NoError(t, err)
	assert.False(t, s.TLS(), "--tls=false turns TLS off, key or not")
	opts, err = s.ClientOptions()
	require.NoError(t, err)
	assert.True(t, opts.ConnectionOptions.TLSDisabled)

	s, err = Resolve(Request{Flags: Layer{Address: "x:7233", TLS: on()}, Env: env{"TEMPORAL_API_KEY": "k", "TEMPORAL_CONFIG_FILE": none["TEMPORAL_CONFIG_FILE"]}})
	require.NoError(t, err)
	assert.Equal(t, "TEMPORAL_API_KEY", s.Sources["api_key"])
	assert.Equal(t, `--address x:7233 --tls --api-key "$TEMPORAL_API_KEY"`, s.CLIFlags(), "the key is named, never printed")
}

// A flag's path replaces a profile's inline certificate (the SDK refuses
// both at once).
func TestAPathReplacesALowerSourcesData(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pemFiles(t, dir, "ca")
	caPEM, err := os.ReadFile(ca)
	require.NoError(t, err)
	file := profiles(t, dir, "[profile.default]\naddress = \"p:7233\"\n[profile.default.tls]\nserver_ca_cert_data = \"\"\"\n"+string(caPEM)+"\"\"\"\n")
	s, err := Resolve(Request{Flags: Layer{ServerCACertPath: ca}, Env: env{"TEMPORAL_CONFIG_FILE": file}})
	require.NoError(t, err)
	assert.Empty(t, s.Profile.TLS.ServerCACertData)
	s, err = Resolve(Request{Env: env{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": ca}})
	require.NoError(t, err)
	assert.Equal(t, ca, s.Profile.TLS.ServerCACertPath)
}

func TestWhatCannotWorkIsRefusedNamingItsSource(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.toml")
	cert, _ := pemFiles(t, dir, "client")
	file := profiles(t, dir, "[profile.prod]\naddress = \"p:7233\"\n")
	for _, tc := range []struct {
		name string
		req  Request
		want []string
	}{
		{"TLS without an address", Request{File: Layer{ServerName: "x"}, FileName: "durawait.toml", Env: env{"TEMPORAL_CONFIG_FILE": none}},
			[]string{"TLS is set (from durawait.toml) but no Temporal address", "TEMPORAL_ADDRESS"}},
		{"an API key without an address", Request{Env: env{"TEMPORAL_API_KEY": "k", "TEMPORAL_CONFIG_FILE": none}},
			[]string{"an API key is set (from TEMPORAL_API_KEY) but no Temporal address"}},
		{"a missing CA file", Request{Flags: Layer{Address: "x:1", ServerCACertPath: filepath.Join(dir, "nope.pem")}, Env: env{"TEMPORAL_CONFIG_FILE": none}},
			[]string{"Temporal TLS (server CA from flags)", "nope.pem"}},
		{"a certificate without its key", Request{Env: env{"TEMPORAL_ADDRESS": "x:1", "TEMPORAL_TLS_CLIENT_CERT_PATH": cert, "TEMPORAL_CONFIG_FILE": none}},
			[]string{"Temporal TLS (client certificate from TEMPORAL_TLS_CLIENT_CERT_PATH)", "other must be present too"}},
		{"an unknown profile", Request{Env: env{"TEMPORAL_PROFILE": "staging", "TEMPORAL_CONFIG_FILE": file}},
			[]string{`Temporal profile "staging" (from TEMPORAL_PROFILE) in ` + file, "unable to find profile staging"}},
		{"a broken config file", Request{Flags: Layer{ConfigFile: profiles(t, t.TempDir(), "[profile.x\n")}, Env: env{}},
			[]string{"Temporal config file", "failed parsing config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.req)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestCLIFlagsConnectTheTemporalCLIAsDurawaitIs(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pemFiles(t, dir, "ca")
	cert, key := pemFiles(t, dir, "client")
	weird := filepath.Join(dir, "my ca's.pem")
	require.NoError(t, os.Link(ca, weird))
	s, err := Resolve(Request{Flags: Layer{Address: "t.example:7233", ServerCACertPath: weird, ClientCertPath: cert, ClientKeyPath: key,
		ServerName: "t.example", DisableHostVerification: on()}, Env: env{"TEMPORAL_CONFIG_FILE": filepath.Join(dir, "none")}})
	require.NoError(t, err)
	got := s.CLIFlags()
	assert.Equal(t, "--address t.example:7233 --tls --tls-ca-path '"+strings.ReplaceAll(weird, "'", `'\''`)+"' --tls-cert-path "+cert+
		" --tls-key-path "+key+" --tls-server-name t.example --tls-disable-host-verification", got)
}

func TestReadAPIKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(path, []byte("  secret-key\n"), 0o600))
	key, err := ReadAPIKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, "secret-key", key)
	require.NoError(t, os.WriteFile(path, []byte("\n"), 0o600))
	_, err = ReadAPIKeyFile(path)
	require.ErrorContains(t, err, "empty")
	_, err = ReadAPIKeyFile(filepath.Join(dir, "none"))
	require.ErrorContains(t, err, "read the API key")
}

// An empty TEMPORAL_* variable (a unit's environment file with
// TEMPORAL_ADDRESS= left blank) is unset: it wipes nothing.
func TestAnEmptyVariableIsUnset(t *testing.T) {
	s, err := Resolve(Request{File: Layer{Address: "cluster:7233", Namespace: "waits"}, FileName: "durawait.toml",
		Env: env{"TEMPORAL_ADDRESS": "", "TEMPORAL_NAMESPACE": "", "TEMPORAL_CONFIG_FILE": filepath.Join(t.TempDir(), "none")}})
	require.NoError(t, err)
	assert.Equal(t, "cluster:7233", s.Address())
	assert.Equal(t, "waits", s.Namespace())
	assert.Equal(t, "durawait.toml", s.Sources["address"])
}

// Certificate data from the environment replaces a lower source's path
// (the environment wins), and a refused TLS setting names where each part
// came from.
func TestEnvironmentDataReplacesAFilesPath(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pemFiles(t, dir, "ca")
	caPEM, err := os.ReadFile(ca)
	require.NoError(t, err)
	none := filepath.Join(dir, "none")
	s, err := Resolve(Request{File: Layer{Address: "x:1", ServerCACertPath: filepath.Join(dir, "gone.pem")}, FileName: "durawait.toml",
		Env: env{"TEMPORAL_TLS_SERVER_CA_CERT_DATA": string(caPEM), "TEMPORAL_CONFIG_FILE": none}})
	require.NoError(t, err)
	assert.Empty(t, s.Profile.TLS.ServerCACertPath)
	assert.Equal(t, "TEMPORAL_TLS_SERVER_CA_CERT_DATA", s.Sources["tls.server_ca"])

	_, err = Resolve(Request{File: Layer{Address: "x:1", ServerCACertPath: filepath.Join(dir, "gone.pem")}, FileName: "durawait.toml",
		Env: env{"TEMPORAL_TLS_SERVER_NAME": "x.example", "TEMPORAL_CONFIG_FILE": none}})
	require.ErrorContains(t, err, "Temporal TLS (server CA from durawait.toml; server name from TEMPORAL_TLS_SERVER_NAME)")
}

// The printed commands authenticate as durawait does, never printing the
// key: from its file, its profile or TEMPORAL_API_KEY; TLS turned off with
// a key is said.
func TestThePrintedCommandsCarryTheKeyByReference(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none")
	s, err := Resolve(Request{File: Layer{Address: "c:7233", APIKey: "secret", APIKeyFile: "/run/secrets/temporal key"}, Env: env{"TEMPORAL_CONFIG_FILE": none}})
	require.NoError(t, err)
	assert.Equal(t, `--address c:7233 --tls --api-key "$(cat '/run/secrets/temporal key')"`, s.CLIFlags())

	s, err = Resolve(Request{Flags: Layer{Address: "c:7233", TLS: off()}, Env: env{"TEMPORAL_API_KEY": "secret", "TEMPORAL_CONFIG_FILE": none}})
	require.NoError(t, err)
	assert.Equal(t, `--address c:7233 --tls=false --api-key "$TEMPORAL_API_KEY"`, s.CLIFlags())

	file := profiles(t, dir, "[profile.prod]\naddress = \"c:7233\"\napi_key = \"secret\"\n")
	s, err = Resolve(Request{Env: env{"TEMPORAL_PROFILE": "prod", "TEMPORAL_CONFIG_FILE": file}})
	require.NoError(t, err)
	assert.Equal(t, "--address c:7233 --tls --profile prod --config-file "+file, s.CLIFlags())
}
