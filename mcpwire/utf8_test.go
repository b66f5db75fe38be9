package mcpwire

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// utf8Cases are arguments as sent and the path invalidUTF8 names in them
// ("" for none); FuzzInvalidUTF8 starts from them too.
var utf8Cases = []struct {
	name, raw, path string
}{
	{"ascii", `{"text":"zz"}`, ""},
	{"valid multibyte", `{"text":"héllo ✓ 𝄞 日本"}`, ""},
	{"valid pair escape", `{"text":"\ud834\udd1e"}`, ""},
	{"escapes", `{"text":"a\"b\\c\n\u00e9\/"}`, ""},
	{"numbers and literals", `{"n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,2,{}],"o":{}}`, ""},
	{"invalid byte", "{\"text\":\"zz\xffzz\"}", "arguments.text"},
	{"truncated sequence", "{\"text\":\"\xe2\x82\"}", "arguments.text"},
	{"overlong", "{\"text\":\"\xc0\xaf\"}", "arguments.text"},
	{"surrogate as bytes", "{\"text\":\"\xed\xa0\x80\"}", "arguments.text"},
	{"lone high escape", `{"prompt":"x\ud800y"}`, "arguments.prompt"},
	{"lone high escape at end", `{"prompt":"x\uD800"}`, "arguments.prompt"},
	{"lone low escape", `{"prompt":"\udc00"}`, "arguments.prompt"},
	{"high then escape", `{"prompt":"\ud800\n"}`, "arguments.prompt"},
	{"two highs", `{"prompt":"\ud800\ud800\udc00"}`, "arguments.prompt"},
	{"nested object", "{\"probe\":{\"server\":\"s\",\"args\":{\"path\":\"a\xffb\"}}}", "arguments.probe.args.path"},
	{"nested array", "{\"probe\":{\"args\":{\"list\":[\"ok\",1,\"\xfe\"]}}}", "arguments.probe.args.list[2]"},
	{"later field", "{\"a\":\"ok\", \"b\" : [ {} , \"\xff\" ] }", "arguments.b[1]"},
	{"in a key", "{\"probe\":{\"ar\xffgs\":1}}", "a key in arguments.probe"},
	{"escaped key", `{"\udfff":1}`, "a key in arguments"},
	{"top-level string", "\"\xff\"", "arguments"},
	{"malformed json", "{\"text\":\"\xff", ""},
	{"empty", ``, ""},
}

func TestInvalidUTF8FindsTheFieldAsSent(t *testing.T) {
	for _, tc := range utf8Cases {
		t.Run(tc.name, func(t *testing.T) {
			path, bad := invalidUTF8([]byte(tc.raw))
			assert.Equal(t, tc.path != "", bad)
			assert.Equal(t, tc.path, path)
		})
	}
}

func TestUTF8RefusalAnswersToolsCallOnly(t *testing.T) {
	msg, ok := parseMessage([]byte("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"wait_for_text\",\"arguments\":{\"text\":\"zz\xffzz\"}}}"))
	require.True(t, ok)
	resp, refused := utf8Refusal(msg)
	require.True(t, refused)
	res, isResult := resp.Result.(*mcp.CallToolResult)
	require.True(t, isResult)
	assert.True(t, res.IsError)
	b, _ := json.Marshal(resp)
	assert.Contains(t, string(b), `"id":7`)
	assert.Contains(t, string(b), "wait_for_text: arguments.text must be valid UTF-8")

	msg, _ = parseMessage([]byte("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":{\"arguments\":{\"text\":\"\xff\"}}}"))
	_, refused = utf8Refusal(msg)
	assert.False(t, refused, "only tools/call carries tool arguments")
	msg, _ = parseMessage([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"wait_for_text","arguments":{"text":"zz"}}}`))
	_, refused = utf8Refusal(msg)
	assert.False(t, refused)
}

// A deeply nested request with long keys costs memory linear in its size:
// the path is spelled out only for a bad string.
func TestInvalidUTF8StaysLinearOnDeepNesting(t *testing.T) {
	key := strings.Repeat("k", 800)
	depth := 2000
	raw := strings.Repeat(`{"`+key+`":`, depth) + `"ok"` + strings.Repeat("}", depth)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, bad := invalidUTF8([]byte(raw))
	runtime.ReadMemStats(&after)
	assert.False(t, bad)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, allocated, uint64(8*len(raw)), "allocated %d bytes for a %d-byte request", allocated, len(raw))

	path, bad := invalidUTF8([]byte(`{"a":[{"b":"x` + "\xff" + `"}]}`))
	assert.True(t, bad)
	assert.Equal(t, "arguments.a[0].b", path)
}
