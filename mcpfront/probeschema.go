package mcpfront

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileInputSchema compiles a downstream tool's input schema, as its
// server sent it, for checking probe arguments. A tool without a usable
// schema (none, or one that does not compile, for example because it refers
// to a remote document) gets nil: its arguments are not checked here, and
// its server remains the judge.
func compileInputSchema(ref toolRef) *jsonschema.Schema {
	raw := ref.Def.RawInputSchema
	if len(raw) == 0 {
		b, err := json.Marshal(ref.Def.InputSchema)
		if err != nil {
			return nil
		}
		raw = b
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	loc := "urn:durawait:probe:" + url.PathEscape(ref.canonical())
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(loc, doc); err != nil {
		return nil
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil
	}
	return sch
}

// noLoader refuses every external reference: a schema is checked only
// against what its server sent, never against a document fetched for it.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external schema %s is not loaded", u)
}

// schemaLeaves are the innermost errors of a validation error: the rules
// actually broken.
func schemaLeaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, schemaLeaves(c)...)
	}
	return out
}

// toolRef names one downstream tool.
type toolRef struct {
	Server string
	Def    mcp.Tool
}

func (r toolRef) canonical() string { return r.Server + "." + r.Def.Name }
