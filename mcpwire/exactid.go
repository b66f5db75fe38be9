package mcpwire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go decodes a numeric JSON-RPC id through float64 (mcp.RequestId), so
// an integer past 2^53 or a long fraction would come back changed, and the
// client could not match the answer to its request. durawait hands mcp-go
// such a request with a string id of its own instead, and puts the
// client's id back in the answer (exactIDs).

// lossyID reports whether id, a JSON number, would not come back from
// mcp-go as the client sent it.
func lossyID(id json.RawMessage) bool {
	text := bytes.TrimSpace(id)
	if len(text) == 0 || text[0] == '"' || bytes.Equal(text, []byte("null")) {
		return false
	}
	var f float64
	if err := json.Unmarshal(text, &f); err != nil {
		// A valid number past float64's range: mcp-go could not decode
		// the message at all.
		var n json.Number
		return json.Unmarshal(text, &n) == nil
	}
	var back []byte
	if f == float64(int64(f)) {
		back = strconv.AppendInt(nil, int64(f), 10)
	} else {
		back, _ = json.Marshal(f)
	}
	return !bytes.Equal(back, text)
}

// exactID is a request's id kept exact around mcp-go: the stand-in mcp-go
// sees, and the client's id it stands for.
type exactID struct {
	standIn []byte // a JSON string no client sends: "durawait-id-<random>"
	id      []byte
}

// withExactID returns raw with a stand-in for its id when mcp-go would
// change the id, and the exactID that restores it; nil when the id is
// safe as it is (or raw cannot be rewritten).
func withExactID(msg message, raw []byte) ([]byte, *exactID) {
	if !lossyID(msg.ID) {
		return raw, nil
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(raw, &req) != nil {
		return raw, nil
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	standIn, _ := json.Marshal("durawait-id-" + hex.EncodeToString(b))
	req["id"] = standIn
	out, err := json.Marshal(req)
	if err != nil {
		return raw, nil
	}
	return out, &exactID{standIn: standIn, id: append([]byte(nil), bytes.TrimSpace(msg.ID)...)}
}

// restore puts the client's id back in an answer.
func (e *exactID) restore(answer []byte) []byte {
	return bytes.ReplaceAll(answer, e.standIn, e.id)
}

// exactIDWriter restores the client's id in everything mcp-go writes for
// one request (a JSON answer, or the events of its SSE stream: mcp-go
// writes each in one Write, so a stand-in is never split).
type exactIDWriter struct {
	http.ResponseWriter
	id *exactID
}

func (w exactIDWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.id.restore(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes a flush on (an SSE stream's events go out as written).
// durawait's HTTP server's writers all flush.
func (w exactIDWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w exactIDWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// exactIDs are the stand-ins of a connection's requests in flight, by
// their client's id (its JSON text), so that a client's
// notifications/cancelled naming its own id reaches the request mcp-go
// knows by the stand-in.
type exactIDs struct{ m sync.Map }

// remember records e for the request key names until forget is called.
func (s *exactIDs) remember(key string, e *exactID) (forget func()) {
	s.m.Store(key, e)
	return func() { s.m.CompareAndDelete(key, e) }
}

// cancelFor returns a notifications/cancelled message raw, with its
// params.requestId replaced by the stand-in of the request it names (key
// makes the lookup key of an id); raw itself when it names none.
func (s *exactIDs) cancelFor(raw []byte, msg message, key func(id json.RawMessage) string) []byte {
	if msg.method != string(mcp.MethodNotificationCancelled) {
		return raw
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg.Params, &params) != nil {
		return raw
	}
	v, ok := s.m.Load(key(params["requestId"]))
	if !ok {
		return raw
	}
	params["requestId"] = v.(*exactID).standIn
	var req map[string]json.RawMessage
	if json.Unmarshal(raw, &req) != nil {
		return raw
	}
	p, err := json.Marshal(params)
	if err != nil {
		return raw
	}
	req["params"] = p
	out, err := json.Marshal(req)
	if err != nil {
		return raw
	}
	return out
}

// idKey is an id's lookup key on a connection of its own (stdio).
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }
