package workflows

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseWaitForText(t *testing.T) {
	spec, err := ParseWaitForText(json.RawMessage(`{"target":{"paneId":"%12","generation":"g1:abc"},"text":"héllo ✓"}`))
	require.NoError(t, err)
	assert.Equal(t, TextWaitSpec{Target: PaneTarget{PaneID: "%12", Generation: "g1:abc"}, Text: "héllo ✓"}, spec)

	exact := strings.Repeat("é", 512) // 1024 bytes, 512 characters
	_, err = ParseWaitForText(json.RawMessage(`{"target":{"paneId":"%0","generation":"g"},"text":"` + exact + `"}`))
	assert.NoError(t, err, "1024 bytes is the limit, counted in bytes")
	_, err = ParseWaitForText(json.RawMessage(`{"target":{"paneId":"%0","generation":"g"},"text":"\ufffd is a real character"}`))
	assert.NoError(t, err, "an escaped U+FFFD is valid UTF-8")
}

func TestParseWaitForTextRules(t *testing.T) {
	for args, msg := range map[string]string{
		`{"target":{"paneId":"3","generation":"g"},"text":"x"}`:                                 `target.paneId: "3" must match ^%(0|[1-9][0-9]*)$`,
		`{"target":{"paneId":"%01","generation":"g"},"text":"x"}`:                               `target.paneId: "%01" must match`,
		`{"target":{"paneId":"%` + strings.Repeat("1", 64) + `","generation":"g"},"text":"x"}`:  "target.paneId: must be at most 64 bytes",
		`{"target":{"paneId":"%1","generation":"` + strings.Repeat("g", 129) + `"},"text":"x"}`: "target.generation: must be at most 128 bytes of UTF-8 (got 129 bytes)",
		`{"target":{"paneId":"%1"},"text":"x"}`:                                                 "target.generation: is required",
		`{"target":{"generation":"g"},"text":"x"}`:                                              "target.paneId: is required",
		`{"target":{"paneId":"%1","generation":"g","x":1},"text":"x"}`:                          "target.x: unknown field",
		`{"target":"%1","text":"x"}`:                                                            "target: must be a JSON object (got a string)",
		`{"text":"x"}`:                                                                          "target: is required",
		`{"target":{"paneId":"%1","generation":"g"}}`:                                           "text: is required",
		`{"target":{"paneId":"%1","generation":"g"},"text":""}`:                                 "text: must be at least 1 byte",
		`{"target":{"paneId":"%1","generation":"g"},"text":"` + strings.Repeat("é", 513) + `"}`: "text: must be at most 1024 bytes of UTF-8 (got 1026 bytes)",
		`{"target":{"paneId":"%1","generation":"g"},"text":"bad \udc00 surrogate"}`:             "text: must be valid UTF-8",
		"{\"target\":{\"paneId\":\"%1\",\"generation\":\"g\"},\"text\":\"bad \xff byte\"}":      "text: must be valid UTF-8",
		`{"target":{"paneId":"%1","generation":"g"},"text":"x","extra":true}`:                   "extra: unknown field",
	} {
		_, err := ParseWaitForText(json.RawMessage(args))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), msg, args)
	}
}
