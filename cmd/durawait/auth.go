package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/durawait/durawait/internal/auth"
	"github.com/durawait/durawait/internal/config"
)

// httpAuth builds the authentication of the MCP front end from the config:
// nil when none is configured (every caller is the local user). dataDir,
// when not empty, is the data dir this process owns: the local token for
// the stdio bridge is written there. The tokens file is read again on
// SIGHUP until ctx ends.
func httpAuth(ctx context.Context, cfg config.Config, dataDir string, logger *slog.Logger) (func(http.ResponseWriter, *http.Request) (string, bool), error) {
	if !cfg.Auth.Enabled() {
		if dataDir != "" {
			auth.RemoveLocalToken(dataDir)
		}
		return nil, nil
	}
	var chain auth.Chain
	if cfg.Auth.TokensFile != "" {
		tokens, err := auth.LoadTokens(cfg.Auth.TokensFile, func(err error) {
			logger.Error("tokens file changed but does not load; the tokens read before stay in force", "error", err)
		})
		if err != nil {
			return nil, err
		}
		chain = append(chain, tokens)
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		go func() {
			defer signal.Stop(hup)
			for {
				select {
				case <-hup:
					if err := tokens.Reload(); err != nil {
						logger.Error("SIGHUP: tokens file does not load; the tokens read before stay in force", "error", err)
					} else {
						logger.Info("SIGHUP: tokens file read again", "file", cfg.Auth.TokensFile)
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if cfg.Auth.JWKSURL != "" {
		jwt, err := auth.NewJWT(auth.JWTOptions{JWKSURL: cfg.Auth.JWKSURL, Issuer: cfg.Auth.Issuer, Audience: cfg.Auth.Audience})
		if err != nil {
			return nil, err
		}
		chain = append(chain, jwt)
	}
	if dataDir != "" {
		local, err := auth.WriteLocalToken(dataDir)
		if err != nil {
			return nil, err
		}
		chain = append(chain, local)
	}
	logger.Info("HTTP callers must authenticate", "tokens_file", cfg.Auth.TokensFile, "jwks_url", cfg.Auth.JWKSURL)
	guard := auth.NewGuard(chain, "durawait")
	guard.Logger = logger
	return guard.Authenticate, nil
}

// localTokenTransport adds the data dir's local token, when there is one,
// to the stdio bridge's requests to the daemon.
type localTokenTransport struct {
	dataDir string
	next    http.RoundTripper
}

func (t *localTokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if token := auth.ReadLocalToken(t.dataDir); token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return t.next.RoundTrip(r)
}
