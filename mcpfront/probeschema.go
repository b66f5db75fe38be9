package mcpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/durawait/durawait/workflows"
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

// CheckProbeArgs implements workflows.ProbeArgsChecker: it checks args
// against the input schema the probe tool's server declared, and names each
// offending property and the rule it breaks.
func (c *catalog) CheckProbeArgs(canonical string, args json.RawMessage) []*workflows.FieldError {
	sch := c.schemas[canonical]
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return []*workflows.FieldError{{Field: "probe.args", Rule: fmt.Sprintf("is not valid JSON: %v", err)}}
	}
	err = sch.Validate(v)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil
	}
	var out []*workflows.FieldError
	for _, leaf := range schemaLeaves(verr) {
		field := "probe.args"
		for _, tok := range leaf.InstanceLocation {
			field += "." + tok
		}
		msg := leaf.Error()
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		rule := "schema"
		if kw := leaf.ErrorKind.KeywordPath(); len(kw) > 0 {
			rule = kw[len(kw)-1]
		}
		out = append(out, &workflows.FieldError{Field: field,
			Rule: fmt.Sprintf("%s (rule %q of %s's inputSchema)", msg, rule, canonical)})
	}
	return out
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
