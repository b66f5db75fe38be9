package workflows

import "strings"

// FieldError is one broken rule of a tool's arguments. Field is the JSON path
// of the offending argument (for example "until.matches"), Rule says what the
// value must be.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// ValidationError lists every rule a tool call broke, in argument order, so a
// caller can fix them all at once. Nothing was started when it is returned.
type ValidationError struct {
	Errors []*FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return "invalid arguments: " + strings.Join(msgs, "; ")
}

// fieldErrors collects FieldErrors while a parser walks its input.
type fieldErrors []*FieldError

func (fs *fieldErrors) add(field, rule string) {
	*fs = append(*fs, &FieldError{Field: field, Rule: rule})
}

// has reports whether field already has an error.
func (fs fieldErrors) has(field string) bool {
	for _, f := range fs {
		if f.Field == field {
			return true
		}
	}
	return false
}

func (fs fieldErrors) err() error {
	if len(fs) == 0 {
		return nil
	}
	return &ValidationError{Errors: fs}
}
