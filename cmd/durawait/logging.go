package main

import (
	"io"
	"log/slog"

	"github.com/durawait/durawait/internal/config"
)

// newLogger is the process's logger on w, at the configured level, in the
// configured format: log_format (--log-format) "json" writes one JSON
// object per line, "text" key=value lines.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
