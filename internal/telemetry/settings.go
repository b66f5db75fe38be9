package telemetry

import (
	"fmt"
	"slices"
	"strings"
)

// The OTLP transport protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// EngineOptInEnv is the variable that lets the embedded Temporal engine
// export its own spans (see Settings.Engine).
const EngineOptInEnv = "DURAWAIT_ENGINE_OTEL"

// Settings is what the OTEL_* environment asks of durawait's telemetry.
type Settings struct {
	// Disabled is OTEL_SDK_DISABLED=true: nothing is exported, whatever
	// else is set (the Prometheus /metrics endpoint still answers).
	Disabled bool
	// Warnings are values read but not honoured as written (an
	// OTEL_SDK_DISABLED that is neither true nor false, read as false,
	// as the specification says); New logs them.
	Warnings []string
	// Traces and Metrics are the two signals durawait exports.
	Traces, Metrics Signal
	// Engine is DURAWAIT_ENGINE_OTEL=1 (or true): the embedded Temporal
	// engine exports its own spans too, through an exporter built like
	// durawait's. Off by default: the engine exports nothing.
	Engine bool
}

// Signal is one signal's export settings.
type Signal struct {
	// Exporter is the exporter's name ("otlp", "console", and "prometheus"
	// for metrics); empty when the signal is not exported.
	Exporter string
	// Protocol is the OTLP protocol (ProtocolGRPC or ProtocolHTTPProtobuf)
	// when Exporter is "otlp".
	Protocol string
	// Endpoint is the OTLP endpoint asked for, or empty for the
	// exporter's default (localhost:4317 for gRPC, localhost:4318 for
	// HTTP).
	Endpoint string
}

// On reports whether the signal is exported.
func (s Signal) On() bool { return s.Exporter != "" }

// LookupFunc reads one environment variable, like os.LookupEnv.
type LookupFunc func(key string) (string, bool)

// ReadSettings reads the OTEL_* environment through lookup. A signal is
// exported when its OTEL_<SIGNAL>_EXPORTER names an exporter, or when an
// OTLP endpoint is set for it (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT); with nothing set, nothing is
// exported and nothing is dialled. "none" turns a signal off. The protocol
// is OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else http/protobuf (the specification's default). A value durawait
// cannot honour is an error naming the variable. Values are read as they
// are, untrimmed, as the exporters (which read the environment themselves)
// read them.
func ReadSettings(lookup LookupFunc) (Settings, error) {
	get := func(key string) string {
		v, _ := lookup(key)
		return v
	}
	var s Settings
	if v := get("OTEL_SDK_DISABLED"); v != "" {
		switch strings.ToLower(v) {
		case "true":
			s.Disabled = true
		case "false":
		default:
			// The specification: an unrecognised value is warned about
			// and read as false.
			s.Warnings = append(s.Warnings, fmt.Sprintf("OTEL_SDK_DISABLED: must be true or false (got %q); read as false", v))
		}
	}
	if v := get(EngineOptInEnv); v != "" {
		switch strings.ToLower(v) {
		case "1", "true":
			s.Engine = true
		case "0", "false":
		default:
			return Settings{}, fmt.Errorf("%s: must be 1 or 0 (got %q)", EngineOptInEnv, v)
		}
	}
	var err error
	if s.Traces, err = readSignal(get, "TRACES", []string{"otlp", "console"}); err != nil {
		return Settings{}, err
	}
	if s.Metrics, err = readSignal(get, "METRICS", []string{"otlp", "console", "prometheus"}); err != nil {
		return Settings{}, err
	}
	if s.Disabled {
		s.Traces, s.Metrics, s.Engine = Signal{}, Signal{}, false
	}
	if !s.Traces.On() {
		s.Engine = false
	}
	return s, nil
}

// readSignal reads one signal's settings; known are the exporters it may
// name besides "none".
func readSignal(get func(string) string, signal string, known []string) (Signal, error) {
	exporterKey := "OTEL_" + signal + "_EXPORTER"
	exporter := get(exporterKey)
	endpoint := get("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")
	if endpoint == "" {
		endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch {
	case exporter == "none":
		return Signal{}, nil
	case exporter == "" && endpoint == "":
		return Signal{}, nil
	case exporter == "":
		exporter = "otlp"
	case strings.Contains(exporter, ","):
		return Signal{}, fmt.Errorf("%s: one exporter only (got %q)", exporterKey, exporter)
	case !slices.Contains(known, exporter):
		return Signal{}, fmt.Errorf("%s: must be one of %s or none (got %q)", exporterKey, strings.Join(known, ", "), exporter)
	}
	s := Signal{Exporter: exporter}
	if exporter != "otlp" {
		return s, nil
	}
	protocolKey := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	protocol := get(protocolKey)
	if protocol == "" {
		protocolKey = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = get(protocolKey)
	}
	switch protocol {
	case "":
		protocol = ProtocolHTTPProtobuf
	case ProtocolGRPC, ProtocolHTTPProtobuf:
	default:
		return Signal{}, fmt.Errorf("%s: must be %s or %s (got %q)", protocolKey, ProtocolGRPC, ProtocolHTTPProtobuf, protocol)
	}
	s.Protocol, s.Endpoint = protocol, endpoint
	return s, nil
}
