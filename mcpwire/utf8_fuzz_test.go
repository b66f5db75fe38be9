package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzInvalidUTF8 holds invalidUTF8, which reads a caller's raw bytes, to
// an oracle written another way: on any input it does not panic and names
// only paths under "arguments"; on valid JSON (the only arguments it is
// given: utf8Refusal's json.Unmarshal of the params has checked them) it
// finds a bad string exactly when the oracle does, the same first one, by
// the same path; and utf8Refusal refuses the tools/call that carries the
// input exactly then, naming that path.
func FuzzInvalidUTF8(f *testing.F) {
	for _, tc := range utf8Cases {
		f.Add([]byte(tc.raw))
	}
	for _, s := range []string{
		`{"a":{"b":[["x",{"c\ud834\udd1e":"\ufffd"}]]}}`,
		"{\"k\":\"\xef\xbf\xbd\\uFFFD\\\\ufffd\\ud800\"}",
		`[{"\\":"\\u","u":"\\\ud800"}]`,
		`{"a.b":{"[0]":"\udbff\udfff"}}`,
		` [ 1e400 , -0 , "\u0000" , true ] `,
		`{"x":"\ud800\u0041"}`,
		`{"x":"\ud800\n\udc00"}`,
		`{"x":"\udc00\ud800"}`,
		"{\"x\":\"\\ud800\xc3\xa9\\udc00\"}",
		`{"x":"\ud800\\udc00"}`,
		"[\"a\",1,{},[],\"\xff\"]",
		`{"a":[1,2,3,{"b\u00e9":[null,"\udc00"]}],"c":"ok"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		path, bad := invalidUTF8(raw)
		if bad != (path != "") {
			t.Fatalf("bad %v with path %q", bad, path)
		}
		if bad && !strings.HasPrefix(path, "arguments") && !strings.HasPrefix(path, "a key in arguments") {
			t.Fatalf("path %q names no place in the arguments", path)
		}
		if !json.Valid(raw) {
			return
		}
		wantPath, wantBad := oracleUTF8(t, raw)
		if bad != wantBad || path != wantPath {
			t.Fatalf("invalidUTF8(%q) = %q, %v; the oracle says %q, %v", raw, path, bad, wantPath, wantBad)
		}

		call := append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":`), raw...), "}}"...)
		msg, ok := parseMessage(call)
		if !ok {
			t.Fatalf("a tools/call carrying valid JSON does not parse: %q", call)
		}
		resp, refused := utf8Refusal(msg)
		if refused != bad {
			t.Fatalf("utf8Refusal refused %v, invalidUTF8 says bad %v", refused, bad)
		}
		if refused {
			b, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			var text struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &text); err != nil || len(text.Result.Content) != 1 ||
				!strings.HasPrefix(text.Result.Content[0].Text, "t: "+path+" must be valid UTF-8") {
				t.Fatalf("refusal %s does not name %q", b, path)
			}
		}
	})
}

// oracleUTF8 is invalidUTF8 for valid JSON, written another way: the
// structure and the paths from encoding/json's tokens; each string
// literal's bytes as sent, found between the previous token's end and its
// own; a literal is bad when those bytes are not UTF-8, or when
// encoding/json's own decoding of it (which turns each unpaired surrogate
// escape into one U+FFFD) holds more U+FFFD than the literal sent, raw or
// as \uFFFD.
func oracleUTF8(t *testing.T, raw []byte) (string, bool) {
	t.Helper()
	type container struct {
		path    string
		object  bool
		key     string // the member whose value comes next (object)
		wantKey bool   // the next string is a key (object)
		index   int    // the element that comes next (array)
	}
	var stack []*container
	done := func() { // a value ended: its container moves on
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	prev := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return "", false
		}
		if err != nil {
			t.Fatalf("encoding/json found %q valid, then failed on it: %v", raw, err)
		}
		end := int(dec.InputOffset())
		span := raw[prev:end]
		prev = end

		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		here := "arguments"
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
			if top.object {
				here = top.path + "." + top.key
			} else {
				here = top.path + "[" + strconv.Itoa(top.index) + "]"
			}
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			stack = append(stack, &container{path: here, object: v == '{', wantKey: v == '{'})
		case string:
			open := bytes.IndexByte(span, '"')
			if open < 0 || len(span) < open+2 || span[len(span)-1] != '"' {
				t.Fatalf("no string literal in %q, between two tokens of %q", span, raw)
			}
			ok := literalOK(span[open+1:len(span)-1], v)
			if top != nil && top.object && top.wantKey {
				if !ok {
					return "a key in " + top.path, true
				}
				top.key, top.wantKey = v, false
				continue
			}
			if !ok {
				return here, true
			}
			done()
		default:
			done()
		}
	}
}

// literalOK reports whether a JSON string literal's bytes as sent (without
// its quotes), which encoding/json decoded to decoded, are valid UTF-8 with
// no unpaired surrogate escape.
func literalOK(lit []byte, decoded string) bool {
	if !utf8.Valid(lit) {
		return false
	}
	sent := bytes.Count(lit, []byte("\uFFFD")) // escapes are ASCII: these are raw
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] == 'u' && strings.EqualFold(string(lit[i+2:i+6]), "fffd") {
			sent++
		}
		i++ // the escaped byte; a \u's hex digits are no backslash
	}
	return strings.Count(decoded, "\uFFFD") == sent
}
