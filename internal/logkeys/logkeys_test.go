package logkeys

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSnake(t *testing.T) {
	for key, want := range map[string]string{
		"WorkflowID": "workflow_id", "RunID": "run_id", "TaskQueue": "task_queue", "WorkerID": "worker_id",
		"ActivityType": "activity_type", "Attempt": "attempt", "wf-namespace-id": "wf_namespace_id",
		"shard-id": "shard_id", "HTTPServer": "http_server", "wait_id": "wait_id", "caller.principal": "caller.principal",
		"duration_ms": "duration_ms", "lease_of": "lease_of", "X": "x", "ID": "id", "sampleN2": "sample_n2",
	} {
		assert.Equal(t, want, Snake(key), key)
	}
}

// Every key reaches the line in snake_case: a record's own, those added
// with With, and a group's.
func TestALinesKeysAreSnakeCase(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(New(slog.NewJSONHandler(&out, nil))).With("component", "temporal-sdk", "WorkflowType", "WaitFor")
	logger.WithGroup("Caller").Info("wait ended", "WorkflowID", "wait_for/1", slog.Group("Detail", "RunID", "r1"), "wf-id", "x")
	var line map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &line), out.String())
	assert.Equal(t, "WaitFor", line["workflow_type"])
	assert.Equal(t, "temporal-sdk", line["component"], "values are left alone")
	caller, ok := line["caller"].(map[string]any)
	require.True(t, ok, out.String())
	assert.Equal(t, "wait_for/1", caller["workflow_id"])
	assert.Equal(t, "x", caller["wf_id"])
	assert.Equal(t, map[string]any{"run_id": "r1"}, caller["detail"])
}

// A field the line repeats from its logger's With, same key once renamed
// and same value, is written once; one with another value stays.
func TestARepeatedFieldIsWrittenOnce(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(New(slog.NewJSONHandler(&out, nil))).With("RunID", "r1", "Attempt", 1)
	logger.Info("wait ended", "run_id", "r1", "attempt", 2)
	assert.Equal(t, 1, bytes.Count(out.Bytes(), []byte(`"run_id"`)), out.String())
	assert.Equal(t, 2, bytes.Count(out.Bytes(), []byte(`"attempt"`)), "another value stays: %s", out.String())
}

// Values a == cannot compare (a slice, a map) under a repeated key are
// written, never compared.
func TestUncomparableValuesAreNeverCompared(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(New(slog.NewJSONHandler(&out, nil))).With("tags", []string{"a"})
	assert.NotPanics(t, func() { logger.Info("line", "tags", []string{"a"}) })
	assert.Equal(t, 2, bytes.Count(out.Bytes(), []byte(`"tags"`)), out.String())
}
