package agentstream

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/durawait/durawait/workflows"
)

// geminiParser reads Gemini CLI's --output-format stream-json.
type geminiParser struct {
	reply string
	// dropped counts the bytes cut from the front of a long streamed reply.
	dropped int
	tools   map[string]string // tool_id -> tool name
}

type geminiLine struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Delta     bool   `json:"delta"`
	ToolName  string `json:"tool_name"`
	ToolID    string `json:"tool_id"`
	Status    string `json:"status"`
	Output    string `json:"output"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *geminiParser) Parse(raw []byte) []Event {
	var l geminiLine
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	switch l.Type {
	case "init":
		return []Event{{SessionID: l.SessionID}}
	case "message":
		if l.Role != "assistant" {
			return nil
		}
		if l.Delta {
			p.reply += l.Content
		} else {
			p.reply, p.dropped = l.Content, 0
		}
		p.keepEnd()
		return []Event{{Reply: p.reply}}
	case "tool_use":
		p.tools[l.ToolID] = l.ToolName
		// A new assistant message starts after the tool call.
		p.reply, p.dropped = "", 0
		return []Event{{Activity: &workflows.AgentActivity{Kind: "tool_call", State: "running", ToolName: l.ToolName}}}
	case "tool_result":
		state := "completed"
		if l.Status == "error" {
			state = "failed"
		}
		evs := []Event{{Activity: &workflows.AgentActivity{Kind: "tool_call", State: state, ToolName: p.tools[l.ToolID]}}}
		msg := l.Output
		if l.Error != nil {
			msg = l.Error.Message
		}
		if l.Status == "error" && Classify(msg) == workflows.BlockerPermission {
			evs = append(evs, Event{Blocker: blocker(workflows.BlockerPermission, msg)})
		}
		return evs
	case "error":
		if isRetry(l.Message) {
			return []Event{{Activity: &workflows.AgentActivity{Kind: "api_retry", State: workflows.Tail(l.Message, 200)}}}
		}
		if l.Severity == "warning" {
			return nil
		}
		if code := Classify(l.Message); code != "" {
			return []Event{{Blocker: blocker(code, l.Message)}}
		}
	case "result":
		f := &Final{IsError: l.Status == "error", Output: p.reply, Dropped: p.dropped}
		if f.IsError {
			msg := "run failed"
			if l.Error != nil && l.Error.Message != "" {
				msg = l.Error.Message
			}
			if code := Classify(msg); code != "" {
				f.Error = blocker(code, msg)
				return []Event{{Blocker: f.Error}, {Final: f}}
			}
			f.Error = &workflows.AgentError{Code: workflows.ErrCodeAgentError, Message: msg}
		}
		return []Event{{Final: f}}
	}
	return nil
}

// keepEnd holds a reply streamed in deltas to its last MaxFinalOutputBytes,
// cut on a character boundary, so a long run's parser state stays bounded.
func (p *geminiParser) keepEnd() {
	over := len(p.reply) - MaxFinalOutputBytes
	if over <= 0 {
		return
	}
	for over < len(p.reply) && !utf8.RuneStart(p.reply[over]) {
		over++
	}
	p.dropped += over
	p.reply = p.reply[over:]
}
