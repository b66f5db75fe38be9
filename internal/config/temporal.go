package config

import (
	"fmt"
	"path/filepath"

	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/durawait/durawait/internal/temporalconn"
)

// TemporalTLS is [temporal_tls]: TLS to a Temporal cluster, with the keys
// of a Temporal config file profile's tls table. Any key set turns TLS on,
// unless disabled is true.
type TemporalTLS struct {
	Disabled                *bool  `toml:"disabled"`
	ServerCACertPath        string `toml:"server_ca_cert_path"`
	ClientCertPath          string `toml:"client_cert_path"`
	ClientKeyPath           string `toml:"client_key_path"`
	ServerName              string `toml:"server_name"`
	DisableHostVerification *bool  `toml:"disable_host_verification"`
}

// resolvePaths makes the TLS file paths absolute, from the config file's
// folder.
func (t *TemporalTLS) resolvePaths(base string) {
	for _, p := range []*string{&t.ServerCACertPath, &t.ClientCertPath, &t.ClientKeyPath} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
}

// temporalLayer is the file's connection settings (the API key read from
// temporal_api_key_file).
func (c Config) temporalLayer() (temporalconn.Layer, error) {
	t := c.TemporalTLS
	l := temporalconn.Layer{
		Address: c.Temporal, Namespace: c.Namespace,
		ServerCACertPath: t.ServerCACertPath, ClientCertPath: t.ClientCertPath, ClientKeyPath: t.ClientKeyPath,
		ServerName: t.ServerName, DisableHostVerification: t.DisableHostVerification,
		Profile: c.TemporalProfile, ConfigFile: c.TemporalConfigFile,
	}
	if t.Disabled != nil {
		on := !*t.Disabled
		l.TLS = &on
	}
	if c.TemporalAPIKeyFile != "" {
		key, err := temporalconn.ReadAPIKeyFile(c.TemporalAPIKeyFile)
		if err != nil {
			return temporalconn.Layer{}, fmt.Errorf("temporal_api_key_file: %w", err)
		}
		l.APIKey, l.APIKeyFile = key, c.TemporalAPIKeyFile
	}
	return l, nil
}

// ResolveTemporal resolves the Temporal connection from flags (the command
// line's settings), the TEMPORAL_* environment (env; nil is the process's),
// this file's keys and the Temporal config file's profile, in that order of
// precedence (see internal/temporalconn), and sets Temporal, Namespace and
// Connection. fileName names this file in errors and logs.
func (c *Config) ResolveTemporal(flags temporalconn.Layer, env envconfig.EnvLookup, fileName string) error {
	file, err := c.temporalLayer()
	if err != nil {
		return err
	}
	s, err := temporalconn.Resolve(temporalconn.Request{Flags: flags, File: file, FileName: fileName, Env: env})
	if err != nil {
		return err
	}
	c.Temporal, c.Namespace, c.Connection = s.Address(), s.Namespace(), s
	return nil
}
