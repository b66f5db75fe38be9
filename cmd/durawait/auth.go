package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/durawait/durawait/internal/auth"
	"github.com/durawait/durawait/internal/config"
)

// httpAuth builds the authentication of the MCP front end from the config:
// nil when none is configured (every caller is the local user). dataDir,
// when not empty, is the data dir this process owns: the local token for
// the stdio bridge is written there. A stdio daemon (daemon) always
// requires a credential: without [auth] the local token alone, so that a
// loopback port found by another user of the machine gives them nothing.
// The tokens file is read again on SIGHUP until ctx ends.
func httpAuth(ctx context.Context, cfg config.Config, dataDir string, daemon bool, logger *slog.Logger) (func(http.ResponseWriter, *http.Request) (string, bool), error) {
	if !cfg.Auth.Enabled() && !daemon {
		if dataDir != "" {
			auth.RemoveLocalToken(dataDir)
		}
		return nil, nil
	}
	if daemon && dataDir == "" {
		return nil, errors.New("the stdio daemon runs the embedded engine, which owns the data dir where its local token goes: run it without --temporal")
	}
	var chain auth.Chain
	if cfg.Auth.TokensFile != "" {
		tokens, err := auth.LoadTokens(cfg.Auth.TokensFile, func(err error) {
			logger.Error("tokens file changed but does not load; the tokens read before stay in force", "error", err)
		})
		if err != nil {
			return nil, err
		}
		warnExposedTokens(tokens, logger)
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
						warnExposedTokens(tokens, logger)
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
	if cfg.Auth.Enabled() {
		logger.Info("HTTP callers must authenticate", "tokens_file", cfg.Auth.TokensFile, "jwks_url", cfg.Auth.JWKSURL)
	} else {
		logger.Info("the daemon's HTTP callers must present the local token (only the data dir's owner can read it)",
			"local_token", filepath.Join(dataDir, auth.LocalTokenFile))
	}
	guard := auth.NewGuard(chain, "durawait")
	guard.Logger = logger
	return guard.Authenticate, nil
}

// warnExposedTokens logs the tokens file's mode when it gives its tokens
// away (a file that lets others change it does not load at all).
func warnExposedTokens(tokens *auth.Tokens, logger *slog.Logger) {
	if w := tokens.Warning(); w != "" {
		logger.Warn("the tokens file is readable by every user", "problem", w)
	}
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
