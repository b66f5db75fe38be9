package agentstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/durawait/durawait/workflows"
)

// rateLimitPatience is how soon a rejected rate limit must reset to count as
// a transient wait rather than a blocker.
const rateLimitPatience = 5 * time.Minute

// claudeParser reads Claude Code's --output-format stream-json (with --verbose).
type claudeParser struct {
	now   func() time.Time
	tools map[string]string // tool_use id -> tool name
}

type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   struct {
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			ToolUseID string          `json:"tool_use_id"`
			IsError   bool            `json:"is_error"`
			Content   json.RawMessage `json:"content"`
		} `json:"content"`
	} `json:"message"`
	// result
	IsError           bool   `json:"is_error"`
	Result            string `json:"result"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
	// system api_retry: the CLI retries a failed API request.
	Attempt      int             `json:"attempt"`
	MaxRetries   int             `json:"max_retries"`
	RetryDelayMs int64           `json:"retry_delay_ms"`
	ErrorStatus  *int            `json:"error_status"`
	Error        json.RawMessage `json:"error"`
	// rate_limit_event
	RateLimitInfo *struct {
		Status        string `json:"status"`
		ResetsAt      int64  `json:"resetsAt"`
		RateLimitType string `json:"rateLimitType"`
	} `json:"rate_limit_info"`
}

func (p *claudeParser) Parse(raw []byte) []Event {
	var l claudeLine
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	var evs []Event
	if l.SessionID != "" {
		evs = append(evs, Event{SessionID: l.SessionID})
	}
	switch l.Type {
	case "assistant":
		var texts []string
		for _, c := range l.Message.Content {
			switch c.Type {
			case "text":
				texts = append(texts, c.Text)
			case "tool_use":
				p.tools[c.ID] = c.Name
				evs = append(evs, Event{Activity: &workflows.AgentActivity{Kind: "tool_call", State: "running", ToolName: c.Name}})
				if c.Name == "AskUserQuestion" {
					evs = append(evs, Event{Blocker: blocker(workflows.BlockerQuestion, "the agent asked the user a question, which headless mode cannot answer")})
				}
			}
		}
		if len(texts) > 0 {
			evs = append(evs, Event{Reply: strings.Join(texts, "\n")})
		}
	case "user":
		for _, c := range l.Message.Content {
			if c.Type != "tool_result" {
				continue
			}
			state := "completed"
			if c.IsError {
				state = "failed"
			}
			evs = append(evs, Event{Activity: &workflows.AgentActivity{Kind: "tool_call", State: state, ToolName: p.tools[c.ToolUseID]}})
			if c.IsError {
				if text := toolResultText(c.Content); Classify(text) == workflows.BlockerPermission {
					evs = append(evs, Event{Blocker: blocker(workflows.BlockerPermission, text)})
				}
			}
		}
	case "system":
		if l.Subtype == "api_retry" {
			evs = append(evs, Event{Activity: &workflows.AgentActivity{Kind: "api_retry", State: l.retryState()}})
		}
	case "rate_limit_event":
		if info := l.RateLimitInfo; info != nil && info.Status == "rejected" {
			resets := time.Unix(info.ResetsAt, 0)
			if info.ResetsAt == 0 || resets.Sub(p.now()) > rateLimitPatience {
				msg := fmt.Sprintf("%s rate limit reached", orDefault(info.RateLimitType, "usage"))
				if info.ResetsAt != 0 {
					msg += "; resets at " + resets.UTC().Format(time.RFC3339)
				}
				evs = append(evs, Event{Blocker: blocker(workflows.BlockerRateLimit, msg)})
			}
		}
	case "result":
		f := &Final{IsError: l.IsError || (l.Subtype != "" && l.Subtype != "success"), Output: l.Result}
		if len(l.PermissionDenials) > 0 {
			var names []string
			for _, d := range l.PermissionDenials {
				names = append(names, d.ToolName)
			}
			evs = append(evs, Event{Blocker: blocker(workflows.BlockerPermission,
				"permission denied in headless mode for: "+strings.Join(names, ", "))})
		}
		if f.IsError {
			if code := Classify(l.Result); code != "" {
				f.Error = blocker(code, l.Result)
				evs = append(evs, Event{Blocker: f.Error})
			} else {
				f.Error = &workflows.AgentError{Code: workflows.ErrCodeAgentError, Message: orDefault(l.Result, l.Subtype)}
			}
		}
		evs = append(evs, Event{Final: f})
	}
	return evs
}

// toolResultText reads a tool_result's content: a string or text blocks.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// retryState describes an api_retry line: "attempt 2 of 10, next in 4s:
// 529 overloaded".
func (l claudeLine) retryState() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", l.Attempt)
	if l.MaxRetries > 0 {
		fmt.Fprintf(&b, " of %d", l.MaxRetries)
	}
	if l.RetryDelayMs > 0 {
		fmt.Fprintf(&b, ", next in %s", (time.Duration(l.RetryDelayMs) * time.Millisecond).Round(100*time.Millisecond))
	}
	var reason []string
	if l.ErrorStatus != nil {
		reason = append(reason, fmt.Sprint(*l.ErrorStatus))
	}
	var msg string
	if json.Unmarshal(l.Error, &msg) != nil {
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		_ = json.Unmarshal(l.Error, &obj)
		msg = orDefault(obj.Message, obj.Type)
	}
	if msg != "" {
		reason = append(reason, msg)
	}
	if len(reason) > 0 {
		b.WriteString(": " + strings.Join(reason, " "))
	}
	return workflows.Tail(b.String(), 200)
}
