package visit

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/llm"
)

// Chatter is the part of *llm.Client the summarizer uses.
type Chatter interface {
	// Chat sends one conversation and returns the assistant's turn.
	Chat(ctx context.Context, req llm.Request) (*llm.Turn, error)
}

// LLMSummarizer is a Summarizer backed by a model served through
// llm (any dialect; token capture is not needed).
type LLMSummarizer struct {
	// Client serves the summarizer model.
	Client Chatter
	// MaxTokens caps the answer; 0 means 2048.
	MaxTokens int
}

var _ Summarizer = (*LLMSummarizer)(nil)

const extractPrompt = `Read the web page content below and extract what serves the user's goal.

## Web page content
%s

## User goal
%s

## Instructions
1. rational: say which parts of the page bear on the goal, or that none do.
2. evidence: copy the passages that bear on the goal, as complete as needed, keeping their wording.
3. summary: answer the goal in a short paragraph using only the evidence; say so if the page does not answer it.

Reply with one JSON object with exactly the string fields "rational", "evidence" and "summary", and nothing else.`

// Summarize implements Summarizer.
func (s *LLMSummarizer) Summarize(ctx context.Context, goal, content string) (Extraction, error) {
	maxTok := s.MaxTokens
	if maxTok <= 0 {
		maxTok = 2048
	}
	temp := 0.0
	turn, err := s.Client.Chat(ctx, llm.Request{
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf(extractPrompt, content, goal)}},
		Sampling: &llm.Sampling{MaxTokens: maxTok, Temperature: &temp},
	})
	if err != nil {
		return Extraction{}, fmt.Errorf("summarize: %w", err)
	}
	return ParseExtraction(turn.Message.Content)
}
