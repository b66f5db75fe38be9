package main

import (
	"io"
	"log/slog"

	"github.com/durawait/durawait/internal/config"
	"github.com/durawait/durawait/internal/logkeys"
)

// newLogger is the process's logger on w, at the configured level, in the
// configured format: log_format (--log-format) "json" writes one JSON
// object per line, "text" key=value lines. Every field name is snake_case,
// the Temporal SDK's and server's too (logkeys).
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(logkeys.New(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(logkeys.New(slog.NewTextHandler(w, opts)))
}
