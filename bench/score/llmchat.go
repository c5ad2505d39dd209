package score

import (
	"context"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// LLMChat adapts an inference client (any dialect, usually "openai" for a
// hosted judge) to ChatModel.
type LLMChat struct {
	Client *llm.Client
}

var _ ChatModel = LLMChat{}

// Complete sends one system + user exchange and returns the reply's text,
// with any <think> block the server left in the content removed.
func (c LLMChat) Complete(ctx context.Context, system, user string) (string, error) {
	var msgs []openai.ChatCompletionMessage
	if system != "" {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: user})
	t, err := c.Client.Chat(ctx, llm.Request{Messages: msgs})
	if err != nil {
		return "", err
	}
	content := t.Message.Content
	if _, after, found := strings.Cut(content, "</think>"); found && strings.HasPrefix(strings.TrimSpace(content), "<think>") {
		content = after
	}
	return strings.TrimSpace(content), nil
}
