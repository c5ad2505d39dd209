package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mgrpo/mgrpo/bench/score"
	"github.com/mgrpo/mgrpo/run"
)

// judgeFlags configure an LLM judge on any OpenAI-compatible endpoint.
func judgeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "judge-url", Usage: "OpenAI-compatible base URL of the judge model (key from " + run.EnvJudgeKey + ")"},
		&cli.StringFlag{Name: "judge-model", Usage: "judge model name"},
		&cli.StringFlag{Name: "judge-dialect", Value: run.DialectOpenAI, Usage: "openai, vllm or sglang"},
	}
}

// judgeModel builds the judge from the flags; nil when no judge is
// configured. Giving only one of --judge-url and --judge-model is an error.
func judgeModel(c *cli.Context) (score.ChatModel, func(), error) {
	url, model := c.String("judge-url"), c.String("judge-model")
	if url == "" && model == "" {
		return nil, func() {}, nil
	}
	if url == "" || model == "" {
		return nil, nil, usagef("--judge-url and --judge-model go together (got url %q, model %q)", url, model)
	}
	judge, closeJudge, err := run.NewJudge(url, model, c.String("judge-dialect"), loggerOf(c))
	if err != nil {
		return nil, nil, usageError{err}
	}
	return judge, closeJudge, nil
}
