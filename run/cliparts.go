package run

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools/visit"
)

// The CLI shows what the runtime reports and defaults to without
// importing it: run is the one place that wires the farm and its clients.

// Progress is a step's progress as the farm reports it (the CLI draws it).
type Progress = farm.Progress

// RoleChanges are what a rescore changed of one role's samples.
type RoleChanges = farm.RoleChanges

// RescoreStep is what a rescore changed in one step.
type RescoreStep = farm.RescoreStep

const (
	// DefaultLease is the farm's lease of the run's lock and of claimed
	// rollouts.
	DefaultLease = farm.DefaultLease
	// DefaultGrace is how long in-flight rollouts go on after a stop.
	DefaultGrace = farm.DefaultGrace
	// DialectOpenAI is the model client's dialect of any
	// OpenAI-compatible endpoint.
	DialectOpenAI = llm.DialectOpenAI
)

// NewJudge builds the LLM judge of `mgrpo eval score` on the endpoint url
// serving model (its key from EnvJudgeKey); close releases its client.
func NewJudge(url, model, dialect string, logger *slog.Logger) (judge score.ChatModel, close func(), err error) {
	client, err := llm.New(llm.Config{Role: "judge", Dialect: dialect, Model: model, Endpoints: []string{url},
		APIKey: os.Getenv(EnvJudgeKey), Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("judge: %w", err)
	}
	return score.LLMChat{Client: client}, client.Close, nil
}

// NewSummarizer builds the visit tool's summarizer of `mgrpo tool visit`
// on the endpoint url serving model (dialect "" is openai); nil when url
// or model is empty. close releases its client.
func NewSummarizer(url, model, dialect string) (summarizer visit.Summarizer, close func(), err error) {
	if url == "" || model == "" {
		return nil, func() {}, nil
	}
	if dialect == "" {
		dialect = llm.DialectOpenAI
	}
	c, err := llm.New(llm.Config{Role: "summarizer", Dialect: dialect, Model: model, Endpoints: []string{url}})
	if err != nil {
		return nil, nil, fmt.Errorf("summarizer: %w", err)
	}
	return &visit.LLMSummarizer{Client: c}, c.Close, nil
}
