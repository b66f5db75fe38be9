package mcpfront

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/durawait/durawait/workflows"
)

func schemaDownstream() fakeDownstream {
	readFile := mcp.NewToolWithRawSchema("read_file", "", json.RawMessage(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object", "additionalProperties": false, "required": ["path"],
		"properties": {"path": {"type": "string", "maxLength": 100}, "lines": {"type": "integer", "minimum": 1}}}`))
	readFile.Annotations.ReadOnlyHint, readFile.Annotations.DestructiveHint = mcp.ToBoolPtr(true), mcp.ToBoolPtr(false)
	decoded := mcp.NewTool("counter", mcp.WithString("name", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false))
	remote := mcp.NewToolWithRawSchema("remote", "", json.RawMessage(`{"$ref": "https://example.com/schema.json"}`))
	remote.Annotations.ReadOnlyHint, remote.Annotations.DestructiveHint = mcp.ToBoolPtr(true), mcp.ToBoolPtr(false)
	return fakeDownstream{
		order:  []string{"demo"},
		expose: map[string]bool{"demo": true},
		defs:   map[string][]mcp.Tool{"demo": {readFile, decoded, remote}},
	}
}

func TestProbeArgsAreCheckedAgainstTheInputSchema(t *testing.T) {
	c := catalogOf(t, schemaDownstream(), nil)
	cases := []struct {
		name, probe string
		fields      []string
		rules       []string
	}{
		{"wrong type", `{"tool":"read_file","args":{"path":123}}`, []string{"probe.args.path"},
			[]string{`got number, want string (rule "type" of demo.read_file's inputSchema)`}},
		{"missing required", `{"tool":"read_file","args":{}}`, []string{"probe.args"}, []string{`missing property 'path' (rule "required"`}},
		{"unknown property", `{"tool":"read_file","args":{"path":"/x","colour":1}}`, []string{"probe.args"}, []string{`additional properties 'colour' not allowed (rule "additionalProperties"`}},
		{"every broken rule", `{"tool":"read_file","args":{"path":"/x","lines":0.5}}`, []string{"probe.args.lines"}, []string{"want integer"}},
		{"two broken rules", `{"tool":"read_file","args":{"path":1,"lines":0}}`, []string{"probe.args.path", "probe.args.lines"}, []string{"want string", "minimum"}},
		{"schema decoded by mcp-go", `{"tool":"counter","args":{"name":false}}`, []string{"probe.args.name"}, []string{"got boolean, want string"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workflows.ParseWaitFor(json.RawMessage(`{"probe":`+tc.probe+`,"until":{"matches":"x"}}`), c)
			var verr *workflows.ValidationError
			require.ErrorAs(t, err, &verr)
			var fields, rules []string
			for _, fe := range verr.Errors {
				fields = append(fields, fe.Field)
				rules = append(rules, fe.Rule)
			}
			assert.ElementsMatch(t, tc.fields, fields)
			for i, want := range tc.rules {
				assert.Contains(t, rules[min(i, len(rules)-1)]+" "+verr.Error(), want)
			}
		})
	}
	for _, ok := range []string{
		`{"tool":"read_file","args":{"path":"/tmp/x","lines":3}}`,
		`{"tool":"counter","args":{"name":"a"}}`,
		`{"tool":"remote","args":{"anything":1}}`, // a schema that refers elsewhere is not checked here
	} {
		_, err := workflows.ParseWaitFor(json.RawMessage(`{"probe":`+ok+`,"until":{"matches":"x"}}`), c)
		assert.NoError(t, err, ok)
	}
}
