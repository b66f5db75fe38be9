package agentstream

import (
	"encoding/json"

	"github.com/durawait/durawait/workflows"
)

// codexParser reads `codex exec --json`.
type codexParser struct {
	lastReply string
}

type codexItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"` // older releases
	Text     string `json:"text"`
	Command  string `json:"command"`
	Status   string `json:"status"`
	Server   string `json:"server"`
	Tool     string `json:"tool"`
	Message  string `json:"message"`
}

func (i codexItem) kind() string {
	if i.Type != "" {
		return i.Type
	}
	return i.ItemType
}

type codexLine struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"`
	Item     *codexItem `json:"item"`
	Message  string     `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (p *codexParser) Parse(raw []byte) []Event {
	var l codexLine
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	switch l.Type {
	case "thread.started":
		return []Event{{SessionID: l.ThreadID}}
	case "item.started", "item.updated", "item.completed":
		if l.Item == nil {
			return nil
		}
		return p.item(*l.Item)
	case "request_user_input":
		return []Event{{Blocker: blocker(workflows.BlockerQuestion, orDefault(l.Message, "the agent asked for user input"))}}
	case "turn.completed":
		return []Event{{Final: &Final{Output: p.lastReply}}}
	case "turn.failed":
		msg := "turn failed"
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		f := &Final{IsError: true, Output: p.lastReply}
		if code := Classify(msg); code != "" {
			f.Error = blocker(code, msg)
			return []Event{{Blocker: f.Error}, {Final: f}}
		}
		f.Error = &workflows.AgentError{Code: workflows.ErrCodeAgentError, Message: msg}
		return []Event{{Final: f}}
	case "error":
		if isRetry(l.Message) {
			// "Reconnecting... 2/5 (stream disconnected ...)": show it.
			return []Event{{Activity: &workflows.AgentActivity{Kind: "reconnecting", State: workflows.Tail(l.Message, 200)}}}
		}
		if code := Classify(l.Message); code != "" {
			return []Event{{Blocker: blocker(code, l.Message)}}
		}
	}
	return nil
}

func (p *codexParser) item(it codexItem) []Event {
	switch it.kind() {
	case "agent_message", "assistant_message":
		if it.Text == "" {
			return nil
		}
		p.lastReply = it.Text
		return []Event{{Reply: it.Text}}
	case "command_execution":
		evs := []Event{{Activity: &workflows.AgentActivity{Kind: "command_execution", State: it.Status, ToolName: it.Command}}}
		if it.Status == "declined" {
			evs = append(evs, Event{Blocker: blocker(workflows.BlockerPermission, "command declined in headless mode: "+it.Command)})
		}
		return evs
	case "mcp_tool_call":
		name := it.Tool
		if it.Server != "" {
			name = it.Server + "." + it.Tool
		}
		return []Event{{Activity: &workflows.AgentActivity{Kind: "mcp_tool_call", State: it.Status, ToolName: name}}}
	case "request_user_input":
		return []Event{{Blocker: blocker(workflows.BlockerQuestion, orDefault(it.Text, "the agent asked for user input"))}}
	case "file_change", "web_search", "todo_list":
		return []Event{{Activity: &workflows.AgentActivity{Kind: it.kind(), State: it.Status}}}
	}
	return nil
}
