package mcpwire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// utf8Refusal answers a tools/call request whose arguments hold a string
// that is not valid UTF-8 with a tool error naming the field. It must see
// the request's raw bytes: once mcp-go has decoded the arguments, invalid
// bytes and unpaired surrogate escapes have become U+FFFD, and a check on
// the decoded value never fires (a wait_for_text for "zz\xffzz" would match
// a pane showing "zz\uFFFDzz"). ok is false for every other message.
func utf8Refusal(msg message) (resp mcp.JSONRPCResponse, ok bool) {
	if msg.method != string(mcp.MethodToolsCall) || !msg.isRequest() {
		return mcp.JSONRPCResponse{}, false
	}
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(msg.Params, &params) != nil {
		return mcp.JSONRPCResponse{}, false
	}
	path, bad := invalidUTF8(params.Arguments)
	if !bad {
		return mcp.JSONRPCResponse{}, false
	}
	text := fmt.Sprintf("%s: %s must be valid UTF-8 (the request holds bytes that are not UTF-8, or a \\u escape of an unpaired surrogate)",
		params.Name, path)
	return ResultResponse(msg.ID, mcp.NewToolResultError(text)), true
}

// invalidUTF8 finds a string in the raw JSON value raw (a tool call's
// arguments) that is not valid UTF-8: raw bytes that do not decode, or a
// \uD800-\uDFFF escape that is not half of a surrogate pair. path names the
// first one, "arguments" for the value itself, then ".field" and "[index]"
// steps ("arguments.probe.args.path"); a bad object key is named as
// "a key in <path>". Malformed JSON reports nothing: the JSON-RPC layer
// answers it.
func invalidUTF8(raw []byte) (path string, bad bool) {
	s := &utf8Scanner{b: raw}
	path, bad = s.value("arguments")
	if s.malformed {
		return "", false
	}
	return path, bad
}

// utf8Scanner walks raw JSON, checking every string literal as it is on the
// wire.
type utf8Scanner struct {
	b         []byte
	i         int
	malformed bool
	// steps of the path to the value being checked ("arguments", ".probe",
	// "[2]"); the path is spelled out only for a bad one, so the cost stays
	// linear in the input however deep it nests.
	steps []string
}

// here is the path to the value being checked.
func (s *utf8Scanner) here() string { return strings.Join(s.steps, "") }

func (s *utf8Scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// value checks the value at s.i, reached by the path step step, and moves
// past it.
func (s *utf8Scanner) value(step string) (string, bool) {
	s.steps = append(s.steps, step)
	defer func() { s.steps = s.steps[:len(s.steps)-1] }()
	s.ws()
	if s.i >= len(s.b) {
		s.malformed = true
		return "", false
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		for {
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == '}' {
				s.i++
				return "", false
			}
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				s.malformed = true
				return "", false
			}
			key, valid := s.str()
			if s.malformed {
				return "", false
			}
			if !valid {
				return "a key in " + s.here(), true
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				s.malformed = true
				return "", false
			}
			s.i++
			if p, bad := s.value("." + key); bad || s.malformed {
				return p, bad
			}
			if !s.next('}') {
				return "", false
			}
			if s.b[s.i-1] == '}' {
				return "", false
			}
		}
	case '[':
		s.i++
		for n := 0; ; n++ {
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ']' {
				s.i++
				return "", false
			}
			if p, bad := s.value("[" + strconv.Itoa(n) + "]"); bad || s.malformed {
				return p, bad
			}
			if !s.next(']') {
				return "", false
			}
			if s.b[s.i-1] == ']' {
				return "", false
			}
		}
	case '"':
		_, valid := s.str()
		if !valid && !s.malformed {
			return s.here(), true
		}
		return "", false
	default:
		// A number, true, false or null: no string inside.
		for s.i < len(s.b) && !isDelim(s.b[s.i]) {
			s.i++
		}
		return "", false
	}
}

// next moves past the ',' or the closing byte after a member or element.
func (s *utf8Scanner) next(closing byte) bool {
	s.ws()
	if s.i >= len(s.b) || (s.b[s.i] != ',' && s.b[s.i] != closing) {
		s.malformed = true
		return false
	}
	s.i++
	return true
}

func isDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// str reads the string literal at s.i, returning its content as decoded
// (for keys in paths, invalid parts as U+FFFD) and whether it is valid
// UTF-8 as sent.
func (s *utf8Scanner) str() (string, bool) {
	s.i++ // the opening quote
	start := s.i
	valid := true
	pendingHigh := false // the previous escape was a high surrogate
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			if pendingHigh {
				valid = false
			}
			var decoded string
			_ = json.Unmarshal(s.b[start-1:s.i+1], &decoded)
			s.i++
			return decoded, valid
		case c == '\\':
			if s.i+1 >= len(s.b) {
				s.malformed = true
				return "", false
			}
			if s.b[s.i+1] != 'u' {
				if pendingHigh {
					valid = false
					pendingHigh = false
				}
				s.i += 2
				continue
			}
			if s.i+6 > len(s.b) {
				s.malformed = true
				return "", false
			}
			u, err := strconv.ParseUint(string(s.b[s.i+2:s.i+6]), 16, 16)
			if err != nil {
				s.malformed = true
				return "", false
			}
			switch {
			case u >= 0xD800 && u <= 0xDBFF:
				if pendingHigh {
					valid = false
				}
				pendingHigh = true
			case u >= 0xDC00 && u <= 0xDFFF:
				if !pendingHigh {
					valid = false
				}
				pendingHigh = false
			default:
				if pendingHigh {
					valid = false
				}
				pendingHigh = false
			}
			s.i += 6
		default:
			if pendingHigh {
				valid = false
				pendingHigh = false
			}
			if c < utf8.RuneSelf {
				s.i++
				continue
			}
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				valid = false
			}
			s.i += size
		}
	}
	s.malformed = true
	return "", false
}
