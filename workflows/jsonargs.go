package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Helpers of the argument parsers (ParseWaitFor, ParseWaitForText,
// ParseStartAgent, ParseInvocationID): each reads raw JSON arguments and
// reports every broken rule with its field.

// decodeObject decodes raw as a JSON object, keeping each member raw.
func decodeObject(raw json.RawMessage, field string, errs *fieldErrors) (map[string]json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		errs.add(field, fmt.Sprintf("must be a JSON object (got %s)", jsonKind(trimmed)))
		return nil, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		errs.add(field, fmt.Sprintf("is not valid JSON: %v", err))
		return nil, false
	}
	return obj, true
}

// rejectUnknown reports every member of obj that is not in allowed.
func rejectUnknown(obj map[string]json.RawMessage, prefix string, allowed []string, errs *fieldErrors) {
	var unknown []string
	for k := range obj {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		name := prefix + k
		if k == "" {
			name = prefix + `""`
		}
		errs.add(name, fmt.Sprintf("unknown field (allowed here: %s)", strings.Join(allowed, ", ")))
	}
}

// decodeString decodes raw into s; a value that is not a string (null
// included, which Go would read as "") is reported for field, as "must be a
// string" plus what, and what it got.
func decodeString(raw json.RawMessage, s *string, field, what string, errs *fieldErrors) bool {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '"' && json.Unmarshal(trimmed, s) == nil {
		return true
	}
	errs.add(field, fmt.Sprintf("must be a string%s (got %s)", what, jsonKind(trimmed)))
	return false
}

// jsonKind names the JSON kind of raw (already trimmed), for messages.
func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
