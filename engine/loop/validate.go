package loop

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine/toolset"
	"github.com/blindexec/blindexec/plugins"
)

// ValidationError lists every invalid field of a Request, each named by
// its path in the payload ("messages[2].role", "plugins[0].name").
type ValidationError struct {
	Fields []plugins.FieldError
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return "invalid request: " + strings.Join(msgs, "; ")
}

// Validate checks the request; the error is a *ValidationError.
func (req Request) Validate() error {
	var errs []plugins.FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, plugins.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if req.UserID < 0 {
		add("user_id", "must not be negative")
	}
	validateMessages(req.Messages, add)

	names := make(map[string]bool, len(req.Plugins)) // name: enabled
	for i, p := range req.Plugins {
		field := fmt.Sprintf("plugins[%d]", i)
		if p == nil {
			add(field, "must be a plugin object, not null")
			continue
		}
		if _, dup := names[p.Name]; dup {
			add(field+".name", "duplicate: %q appears twice", p.Name)
		}
		names[p.Name] = p.Enabled()
		var ve *plugins.ValidationError
		if err := p.Validate(); errors.As(err, &ve) {
			for _, fe := range ve.Fields {
				add(field+"."+fe.Field, "%s", fe.Message)
			}
		} else if err != nil {
			add(field, "%v", err)
		}
	}
	for name := range req.FixedParams {
		if _, ok := names[name]; !ok {
			add("fixed_params."+name, "no plugin named %q in plugins", name)
		}
	}

	o := req.Options
	if o.MaxSteps < 0 || o.MaxSteps > MaxMaxSteps {
		add("options.max_steps", "must be between 1 and %d (0: %d)", MaxMaxSteps, DefaultMaxSteps)
	}
	if t := o.Temperature; t != nil && (*t < 0 || *t > 2) {
		add("options.temperature", "must be between 0 and 2")
	}
	if msg := validateToolChoice(o.ToolChoice, names); msg != "" {
		add("options.tool_choice", "%s", msg)
	}
	if _, err := toolset.ParseMode(o.ToolSearch); err != nil {
		add("options.tool_search", "%v", err)
	}
	for i, name := range o.PinnedTools {
		field := fmt.Sprintf("options.pinned_tools[%d]", i)
		switch {
		case !names[name]:
			add(field, "%q is not an enabled plugin of the request", name)
		case slices.Index(o.PinnedTools, name) < i:
			add(field, "duplicate: %q appears twice", name)
		}
	}
	if len(errs) > 0 {
		return &ValidationError{Fields: errs}
	}
	return nil
}

func validateMessages(msgs []openai.ChatCompletionMessage, add func(field, format string, args ...any)) {
	if len(msgs) == 0 {
		add("messages", "at least one message is required")
	}
	callIDs := map[string]bool{} // tool calls asked so far
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		hasContent := m.Content != "" || len(m.MultiContent) > 0
		if m.Content != "" && len(m.MultiContent) > 0 {
			add(field+".content", "either a string or an array of parts, not both")
		}
		switch m.Role {
		case openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper, openai.ChatMessageRoleUser:
			if !hasContent {
				add(field+".content", "required for role %q", m.Role)
			}
		case openai.ChatMessageRoleAssistant:
			if !hasContent && len(m.ToolCalls) == 0 {
				add(field+".content", "required for role \"assistant\" without tool_calls")
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" {
					add(fmt.Sprintf("%s.tool_calls[%d].id", field, j), "required")
				}
				if tc.Function.Name == "" {
					add(fmt.Sprintf("%s.tool_calls[%d].function.name", field, j), "required")
				}
				callIDs[tc.ID] = true
			}
		case openai.ChatMessageRoleTool:
			if m.ToolCallID == "" {
				add(field+".tool_call_id", "required for role \"tool\"")
			} else if !callIDs[m.ToolCallID] {
				add(field+".tool_call_id", "%q answers no tool call of an earlier assistant message", m.ToolCallID)
			}
		case "":
			add(field+".role", "required")
		default:
			add(field+".role", "%q is not a role (system, developer, user, assistant or tool)", m.Role)
		}
	}
}

// validateToolChoice returns what is wrong with a tool_choice, or "".
// plugins maps the plugin names to whether they are enabled.
func validateToolChoice(choice any, plugins map[string]bool) string {
	var name string
	switch c := choice.(type) {
	case nil:
		return ""
	case string:
		switch c {
		case "auto", "none":
			return ""
		case "required":
			for _, enabled := range plugins {
				if enabled {
					return ""
				}
			}
			return `"required" needs at least one enabled plugin`
		}
		return fmt.Sprintf(`%q is not a tool choice ("auto", "none", "required" or {"type":"function","function":{"name":...}})`, c)
	case openai.ToolChoice:
		name = c.Function.Name
	case *openai.ToolChoice:
		if c == nil {
			return ""
		}
		name = c.Function.Name
	case map[string]any: // as decoded from JSON
		fn, _ := c["function"].(map[string]any)
		if c["type"] != "function" || fn == nil {
			return `an object must be {"type":"function","function":{"name":...}}`
		}
		name, _ = fn["name"].(string)
	default:
		return fmt.Sprintf("must be a string or an object, not %T", choice)
	}
	if !plugins[name] {
		return fmt.Sprintf("names %q, which is not an enabled plugin", name)
	}
	return ""
}
