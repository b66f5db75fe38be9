package main

import (
	"flag"

	"github.com/durawait/durawait/internal/temporalconn"
)

// temporalFlags are the flags of the Temporal connection, named as the
// Temporal CLI names them (--address is --temporal here, and the profile
// flags say temporal, since --config is durawait's own file).
type temporalFlags struct {
	fs                                    *flag.FlagSet
	address, namespace, apiKey            *string
	caPath, certPath, keyPath, serverName *string
	profile, configFile                   *string
	tls, disableHostVerification          *bool
}

// registerTemporalFlags adds the connection's flags to fs.
func registerTemporalFlags(fs *flag.FlagSet) *temporalFlags {
	return &temporalFlags{
		fs:         fs,
		address:    fs.String("temporal", "", "HOST:PORT of a Temporal frontend, instead of the embedded engine (or TEMPORAL_ADDRESS)"),
		namespace:  fs.String("namespace", "", `Temporal namespace (or TEMPORAL_NAMESPACE; default "default")`),
		apiKey:     fs.String("api-key", "", "API key of the Temporal cluster; turns TLS on (prefer TEMPORAL_API_KEY or temporal_api_key_file: a flag shows in the process list)"),
		tls:        fs.Bool("tls", false, "connect to Temporal with TLS (any --tls-* flag turns it on too; --tls=false turns it off)"),
		caPath:     fs.String("tls-ca-path", "", "PEM file of the CA that signed the Temporal frontend's certificate"),
		certPath:   fs.String("tls-cert-path", "", "PEM file of the client certificate, for mTLS"),
		keyPath:    fs.String("tls-key-path", "", "PEM file of the client certificate's private key, for mTLS"),
		serverName: fs.String("tls-server-name", "", "server name to verify the Temporal frontend's certificate against (and send as SNI)"),
		disableHostVerification: fs.Bool("tls-disable-host-verification", false,
			"do not verify the Temporal frontend's certificate (tests only)"),
		profile:    fs.String("temporal-profile", "", "profile of the Temporal config file to connect with (or TEMPORAL_PROFILE)"),
		configFile: fs.String("temporal-config-file", "", "Temporal config file (or TEMPORAL_CONFIG_FILE; default the Temporal CLI's own)"),
	}
}

// layer is what the command line set, after parsing.
func (t *temporalFlags) layer() temporalconn.Layer {
	var l temporalconn.Layer
	t.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "temporal":
			l.Address = *t.address
		case "namespace":
			l.Namespace = *t.namespace
		case "api-key":
			l.APIKey = *t.apiKey
		case "tls":
			l.TLS = t.tls
		case "tls-ca-path":
			l.ServerCACertPath = *t.caPath
		case "tls-cert-path":
			l.ClientCertPath = *t.certPath
		case "tls-key-path":
			l.ClientKeyPath = *t.keyPath
		case "tls-server-name":
			l.ServerName = *t.serverName
		case "tls-disable-host-verification":
			l.DisableHostVerification = t.disableHostVerification
		case "temporal-profile":
			l.Profile = *t.profile
		case "temporal-config-file":
			l.ConfigFile = *t.configFile
		}
	})
	return l
}
