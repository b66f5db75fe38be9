// Package temporalconn resolves how durawait connects to a Temporal
// cluster: address, namespace, TLS (server CA, client certificate and key,
// server name), API key and gRPC metadata, the way every Temporal
// application is configured — the Temporal SDK's environment configuration
// (envconfig: TEMPORAL_* variables and the profiles of the Temporal config
// file) — plus durawait's own TOML keys and flags.
//
// Each setting comes from the first of these that sets it:
//
//  1. a command-line flag (--temporal, --namespace, --tls-*, --api-key, ...);
//  2. a TEMPORAL_* environment variable (TEMPORAL_ADDRESS, TEMPORAL_TLS_*, ...);
//  3. durawait's TOML file (temporal, namespace, [temporal_tls], ...);
//  4. the selected profile of the Temporal config file (TEMPORAL_CONFIG_FILE,
//     else the Temporal CLI's own file, ~/.config/temporalio/temporal.toml).
//
// The profile and the config file are chosen the same way (flag, then
// environment, then TOML). No address anywhere means the embedded engine.
package temporalconn

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
)

// DefaultNamespace is the namespace when no source names one.
const DefaultNamespace = "default"

// Layer is one source's connection settings (a flag set or durawait's TOML
// file); zero values are unset and leave the lower sources' values.
type Layer struct {
	Address   string
	Namespace string
	APIKey    string
	// APIKeyFile is the file APIKey was read from, if any: the printed CLI
	// commands read it from there too.
	APIKeyFile string
	// TLS turns TLS on or off explicitly; any other TLS field turns it on.
	TLS                     *bool
	ServerCACertPath        string
	ClientCertPath          string
	ClientKeyPath           string
	ServerName              string
	DisableHostVerification *bool
	// Profile and ConfigFile select the Temporal config file's profile.
	Profile    string
	ConfigFile string
}

// hasTLS reports whether the layer sets any TLS field.
func (l Layer) hasTLS() bool {
	return l.TLS != nil || l.ServerCACertPath != "" || l.ClientCertPath != "" || l.ClientKeyPath != "" ||
		l.ServerName != "" || l.DisableHostVerification != nil
}

// Request names the sources to resolve from.
type Request struct {
	// Flags are the command line's settings, named FlagsName in Sources.
	Flags Layer
	// File is durawait's TOML file's settings, named FileName in Sources.
	File     Layer
	FileName string
	// Env looks the TEMPORAL_* variables up; nil is the process's
	// environment.
	Env envconfig.EnvLookup
}

// FlagsName names the command line in Settings.Sources.
const FlagsName = "flags"

// Settings are a resolved connection.
type Settings struct {
	// Profile holds the resolved values in the SDK's own form.
	Profile envconfig.ClientConfigProfile
	// Sources says where each setting came from: keys "address",
	// "namespace", "api_key", "tls" (the last source that set any TLS
	// field) and one per TLS field ("tls.server_ca", "tls.client_cert",
	// "tls.client_key", "tls.server_name", "tls.on"); values "flags", an
	// environment variable's name, the TOML file's name or `profile "p" of
	// <file>`.
	Sources map[string]string

	// profile and configFile are the Temporal config file's profile and
	// path; apiKeyFile the file the API key was read from.
	profile, configFile, apiKeyFile string
}

// Address is the Temporal frontend's HOST:PORT; empty means none was given
// (the embedded engine).
func (s Settings) Address() string { return s.Profile.Address }

// Namespace is the namespace durawait runs its waits in.
func (s Settings) Namespace() string { return s.Profile.Namespace }

// TLS reports whether the connection uses TLS (an API key turns it on
// unless TLS is disabled explicitly, as the SDK does).
func (s Settings) TLS() bool {
	if s.Profile.TLS != nil {
		return !s.Profile.TLS.Disabled
	}
	return s.Profile.APIKey != ""
}

// APIKey reports whether an API key is set.
func (s Settings) APIKey() bool { return s.Profile.APIKey != "" }

// Resolve applies the sources in order of precedence (see the package
// documentation) and checks the result: files it names are read, so a
// missing certificate is reported at start-up, naming where its path came
// from.
func Resolve(r Request) (Settings, error) {
	env := r.Env
	if env == nil {
		env = envconfig.EnvLookupOS
	}
	env = nonEmpty{env}
	fileName := r.FileName
	if fileName == "" {
		fileName = "the config file"
	}
	s := Settings{Sources: map[string]string{}}

	profileName, profileSource := pick(r.Flags.Profile, FlagsName, env, "TEMPORAL_PROFILE", r.File.Profile, fileName)
	configFile, _ := pick(r.Flags.ConfigFile, FlagsName, env, "TEMPORAL_CONFIG_FILE", r.File.ConfigFile, fileName)
	if configFile == "" {
		configFile = envconfig.DefaultConfigFilePath()
	}
	prof, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath: configFile, ConfigFileProfile: profileName, DisableEnv: true, EnvLookup: env,
	})
	if err != nil {
		if profileName != "" {
			return Settings{}, fmt.Errorf("Temporal profile %q (from %s) in %s: %w", profileName, profileSource, configFile, err)
		}
		return Settings{}, fmt.Errorf("Temporal config file %s: %w", configFile, err)
	}
	s.Profile = prof
	if profileName == "" {
		profileName = envconfig.DefaultConfigFileProfile
	}
	s.profile, s.configFile = profileName, configFile
	s.noteProfile(fmt.Sprintf("profile %q of %s", profileName, configFile))

	s.overlay(r.File, fileName)
	if err := s.applyEnv(env); err != nil {
		return Settings{}, err
	}
	s.overlay(r.Flags, FlagsName)

	if s.Profile.Namespace == "" {
		s.Profile.Namespace = DefaultNamespace
		s.Sources["namespace"] = "default"
	}
	return s, s.check()
}

// nonEmpty is an environment whose empty variables are unset: a
// TEMPORAL_ADDRESS= left empty in a unit's environment file must not wipe
// the config file's address (and turn durawait serve to its embedded
// engine).
type nonEmpty struct{ envconfig.EnvLookup }

func (e nonEmpty) LookupEnv(name string) (string, bool) {
	v, ok := e.EnvLookup.LookupEnv(name)
	return v, ok && v != ""
}

func (e nonEmpty) Environ() []string {
	var out []string
	for _, kv := range e.EnvLookup.Environ() {
		if _, v, _ := strings.Cut(kv, "="); v != "" {
			out = append(out, kv)
		}
	}
	return out
}

// pick returns the first set of a flag, an environment variable and a file
// value, with its source.
func pick(flag, flagName string, env envconfig.EnvLookup, envName, file, fileName string) (string, string) {
	if flag != "" {
		return flag, flagName
	}
	if v, _ := env.LookupEnv(envName); v != "" {
		return v, envName
	}
	return file, fileName
}

// noteProfile records the settings the Temporal config file's profile set.
func (s *Settings) noteProfile(source string) {
	p := s.Profile
	if p.Address != "" {
		s.Sources["address"] = source
	}
	if p.Namespace != "" {
		s.Sources["namespace"] = source
	}
	if p.APIKey != "" {
		s.Sources["api_key"] = source
	}
	if p.TLS != nil {
		s.noteTLS(source, *p.TLS)
	}
}

// noteTLS records source as the origin of the TLS fields t sets.
func (s *Settings) noteTLS(source string, t envconfig.ClientConfigTLS) {
	s.Sources["tls"] = source
	for key, set := range map[string]bool{
		"tls.server_ca":   t.ServerCACertPath != "" || len(t.ServerCACertData) > 0,
		"tls.client_cert": t.ClientCertPath != "" || len(t.ClientCertData) > 0,
		"tls.client_key":  t.ClientKeyPath != "" || len(t.ClientKeyData) > 0,
		"tls.server_name": t.ServerName != "",
	} {
		if set {
			s.Sources[key] = source
		}
	}
}

// overlay applies one layer's set values.
func (s *Settings) overlay(l Layer, source string) {
	p := &s.Profile
	if l.Address != "" {
		p.Address = l.Address
		s.Sources["address"] = source
	}
	if l.Namespace != "" {
		p.Namespace = l.Namespace
		s.Sources["namespace"] = source
	}
	if l.APIKey != "" {
		p.APIKey = l.APIKey
		s.Sources["api_key"] = source
		s.apiKeyFile = l.APIKeyFile
	}
	if !l.hasTLS() {
		return
	}
	if p.TLS == nil {
		p.TLS = &envconfig.ClientConfigTLS{}
	}
	t := p.TLS
	t.Disabled = l.TLS != nil && !*l.TLS
	// A path replaces the same file's data from a lower source: the SDK
	// refuses both at once.
	if l.ServerCACertPath != "" {
		t.ServerCACertPath, t.ServerCACertData = l.ServerCACertPath, nil
	}
	if l.ClientCertPath != "" {
		t.ClientCertPath, t.ClientCertData = l.ClientCertPath, nil
	}
	if l.ClientKeyPath != "" {
		t.ClientKeyPath, t.ClientKeyData = l.ClientKeyPath, nil
	}
	if l.ServerName != "" {
		t.ServerName = l.ServerName
	}
	if l.DisableHostVerification != nil {
		t.DisableHostVerification = *l.DisableHostVerification
	}
	s.noteTLS(source, envconfig.ClientConfigTLS{ServerCACertPath: l.ServerCACertPath, ClientCertPath: l.ClientCertPath,
		ClientKeyPath: l.ClientKeyPath, ServerName: l.ServerName})
	if l.TLS != nil {
		s.Sources["tls.on"] = source
	}
}

// envSettings maps each TEMPORAL_* variable envconfig reads to the setting
// it sets.
var envSettings = []struct{ name, setting string }{
	{"TEMPORAL_ADDRESS", "address"},
	{"TEMPORAL_NAMESPACE", "namespace"},
	{"TEMPORAL_API_KEY", "api_key"},
	{"TEMPORAL_TLS", "tls.on"},
	{"TEMPORAL_TLS_CLIENT_CERT_PATH", "tls.client_cert"},
	{"TEMPORAL_TLS_CLIENT_CERT_DATA", "tls.client_cert"},
	{"TEMPORAL_TLS_CLIENT_KEY_PATH", "tls.client_key"},
	{"TEMPORAL_TLS_CLIENT_KEY_DATA", "tls.client_key"},
	{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "tls.server_ca"},
	{"TEMPORAL_TLS_SERVER_CA_CERT_DATA", "tls.server_ca"},
	{"TEMPORAL_TLS_SERVER_NAME", "tls.server_name"},
	{"TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "tls"},
}

// applyEnv applies the TEMPORAL_* environment with the SDK's own rules.
// A variable set to a path replaces the data of the same file from a lower
// source, as a flag does, and data replaces a lower source's path.
func (s *Settings) applyEnv(env envconfig.EnvLookup) error {
	if t := s.Profile.TLS; t != nil {
		for _, pair := range []struct {
			pathVar, dataVar string
			path             *string
			data             *[]byte
		}{
			{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA", &t.ClientCertPath, &t.ClientCertData},
			{"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_CLIENT_KEY_DATA", &t.ClientKeyPath, &t.ClientKeyData},
			{"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_DATA", &t.ServerCACertPath, &t.ServerCACertData},
		} {
			if _, ok := env.LookupEnv(pair.pathVar); ok {
				*pair.data = nil
			}
			if _, ok := env.LookupEnv(pair.dataVar); ok {
				*pair.path = ""
			}
		}
	}
	if err := s.Profile.ApplyEnvVars(env); err != nil {
		return fmt.Errorf("TEMPORAL_* environment: %w", err)
	}
	for _, v := range envSettings {
		if _, ok := env.LookupEnv(v.name); ok {
			s.Sources[v.setting] = v.name
			if strings.HasPrefix(v.setting, "tls") {
				s.Sources["tls"] = v.name
			}
			if v.setting == "api_key" {
				s.apiKeyFile = ""
			}
		}
	}
	return nil
}

// check refuses what cannot work, naming where it came from: TLS or an API
// key without an address (the embedded engine speaks plain gRPC on
// loopback), and TLS settings the SDK refuses (a missing certificate, a key
// without its certificate).
func (s Settings) check() error {
	if s.Address() == "" {
		if s.APIKey() {
			return fmt.Errorf("an API key is set (from %s) but no Temporal address: set --temporal, temporal in the config file or TEMPORAL_ADDRESS (the embedded engine takes no API key)", s.Sources["api_key"])
		}
		if s.TLS() {
			return fmt.Errorf("TLS is set (from %s) but no Temporal address: set --temporal, temporal in the config file or TEMPORAL_ADDRESS (the embedded engine speaks plain gRPC on loopback)", s.Sources["tls"])
		}
		return nil
	}
	if _, err := s.ClientOptions(); err != nil {
		return err
	}
	return nil
}

// ClientOptions are the SDK client options of the connection (HostPort,
// Namespace, Credentials, ConnectionOptions.TLS, HeadersProvider); the
// caller adds its logger, identity and interceptors.
func (s Settings) ClientOptions() (client.Options, error) {
	opts, err := s.Profile.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("Temporal TLS (%s): %w", s.tlsSources(), err)
	}
	return opts, nil
}

// tlsSources says where each TLS setting came from.
func (s Settings) tlsSources() string {
	var parts []string
	for _, f := range []struct{ key, name string }{
		{"tls.server_ca", "server CA"}, {"tls.client_cert", "client certificate"},
		{"tls.client_key", "client key"}, {"tls.server_name", "server name"},
	} {
		if src := s.Sources[f.key]; src != "" {
			parts = append(parts, f.name+" from "+src)
		}
	}
	if len(parts) == 0 {
		return "from " + s.Sources["tls"]
	}
	return strings.Join(parts, "; ")
}

// CLIFlags are the Temporal CLI's flags that connect it as durawait is
// connected, for the commands durawait prints. An API key is never printed:
// it is read from its file, its profile, or TEMPORAL_API_KEY. Certificates
// given as data, not paths, are left to the same TEMPORAL_* environment,
// which the CLI reads too.
func (s Settings) CLIFlags() string {
	var f []string
	add := func(flag, value string) { f = append(f, flag+" "+shellQuote(value)) }
	add("--address", s.Address())
	t := s.Profile.TLS
	switch {
	case s.TLS():
		f = append(f, "--tls")
		if t != nil {
			if t.ServerCACertPath != "" {
				add("--tls-ca-path", t.ServerCACertPath)
			}
			if t.ClientCertPath != "" {
				add("--tls-cert-path", t.ClientCertPath)
			}
			if t.ClientKeyPath != "" {
				add("--tls-key-path", t.ClientKeyPath)
			}
			if t.ServerName != "" {
				add("--tls-server-name", t.ServerName)
			}
			if t.DisableHostVerification {
				f = append(f, "--tls-disable-host-verification")
			}
		}
	case s.APIKey():
		f = append(f, "--tls=false") // an API key turns TLS on unless told
	}
	if s.APIKey() {
		switch src := s.Sources["api_key"]; {
		case s.apiKeyFile != "":
			f = append(f, `--api-key "$(cat `+shellQuote(s.apiKeyFile)+`)"`)
		case strings.HasPrefix(src, "profile "):
			add("--profile", s.profile)
			add("--config-file", s.configFile)
		default:
			f = append(f, `--api-key "$TEMPORAL_API_KEY"`)
		}
	}
	return strings.Join(f, " ")
}

// shellQuote quotes v for a POSIX shell when it needs it.
func shellQuote(v string) string {
	if v != "" && !strings.ContainsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@,=+", r))
	}) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// ReadAPIKeyFile reads an API key from a file (a mounted secret), trimmed
// of surrounding white space; an empty file is an error.
func ReadAPIKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the API key: %w", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", errors.New("the API key file is empty")
	}
	return key, nil
}
