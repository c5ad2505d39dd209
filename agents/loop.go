package agents

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
)

// prepareFunc turns one tool call into the work that carries it out. It
// runs sequentially in call order (so side effects such as numbering
// delegations are deterministic); the returned functions of one turn run
// concurrently.
type prepareFunc func(call openai.ToolCall) func(ctx context.Context) CallRecord

// loop is the turn loop shared by every agent.
type loop struct {
	model   Model
	tools   []openai.Tool
	budget  Budget
	prompts Prompts
	// key routes the trajectory's calls to one endpoint (prefix cache).
	key string
	// seed is the trajectory's base seed; turn i samples with a seed
	// derived from it, so a rollout replays exactly.
	seed    int64
	prepare prepareFunc
	// report is true for executors: their ending is a report, not an
	// answer (it changes the answer-now wording).
	report bool
	// longCalls is true for a loop whose tool calls take long (the
	// planner's delegations run whole executor trajectories): the prompt
	// prefix's memory is released before they run (PromptPrefix.Release),
	// so thousands of waiting planners hold none of it.
	longCalls bool
}

// run drives the conversation until the model answers without tool calls,
// a budget runs out, or a call fails; it fills traj and returns the
// trajectory's messages.
func (l *loop) run(ctx context.Context, system, user string, traj *Trajectory) []openai.ChatCompletionMessage {
	traj.Started = time.Now()
	defer func() { traj.Duration = time.Since(traj.Started) }()
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}
	// The trajectory's prompt ids, carried from call to call so the client
	// decodes only what each prompt adds.
	var prefix llm.PromptPrefix
	// The trajectory's tokens: each call after the first sends only what
	// the conversation added, so the trajectory trains as the one sequence
	// the engine sampled, whatever the chat template does to the past.
	var tokens llm.TokenState
	for turn := 0; ; turn++ {
		if turn == l.budget.MaxTurns {
			traj.formatError(fmt.Sprintf("turn budget of %d exhausted before a final message", l.budget.MaxTurns))
			return msgs
		}
		if err := ctx.Err(); err != nil {
			traj.Error = fmt.Sprintf("turn %d: %v", turn, context.Cause(ctx))
			traj.failAt(turn, contextCause(ctx), "")
			return msgs
		}
		seed := deriveSeed(l.seed, "turn", turn)
		req := llm.Request{Messages: msgs, Tools: l.tools, TrajectoryKey: l.key, Prefix: &prefix, Tokens: &tokens,
			Sampling: &llm.Sampling{Seed: &seed, MaxTokens: l.budget.MaxTokensPerTurn}}
		cuts := tokens.ContextCuts()
		t, err := l.model.Chat(ctx, req)
		if err == nil && tokens.ContextCuts() > cuts && len(traj.Turns) > 0 {
			// The sequence in tokens had no room for this turn: the
			// client rendered the conversation again, a new sequence.
			traj.Splits = append(traj.Splits, Split{Turn: len(traj.Turns), Reason: splitContextCut, Message: len(msgs),
				Detail: "the sequence in tokens outgrew the context: the conversation was rendered again by the chat template"})
		}
		if err == nil && t.Partial() {
			err = fmt.Errorf("the generation ended before the model finished it (%s)", t.FinishReason)
		}
		if err != nil {
			reason := err.Error()
			cause, endpoint := llm.Cause(err)
			if t.Partial() && cause == failure.CauseOther {
				cause, endpoint = failure.CauseServerAbort, t.Endpoint
			}
			if ctx.Err() != nil {
				cause = contextCause(ctx)
				// The rollout's deadline or a shutdown cut the call: that
				// is the reason, the call's own error only how.
				reason = fmt.Sprintf("%v; the call in flight: %v", context.Cause(ctx), err)
			}
			if t.Partial() {
				// The tokens of a generation the server aborted are kept as
				// the last turn, which ends the trajectory unfinished.
				traj.Turns = append(traj.Turns, t)
				traj.Steps = append(traj.Steps, Step{})
				reason += fmt.Sprintf(" (its partial generation of %d tokens is kept as the last turn)", len(t.CompletionIDs))
			}
			traj.Error = fmt.Sprintf("turn %d: %s", turn, reason)
			traj.failAt(turn, cause, endpoint)
			return msgs
		}
		traj.Turns = append(traj.Turns, t)
		msgs = append(msgs, t.Message)
		var step Step
		if t.ToolCallError != nil {
			step.FormatError, step.FormatRaw = t.ToolCallError.Reason, t.ToolCallError.Raw
			traj.Steps = append(traj.Steps, step)
			traj.formatError(fmt.Sprintf("turn %d: %s", turn, step.FormatError))
			text, err := l.prompts.render(PromptFormatError, map[string]any{"Reason": step.FormatError})
			if err != nil {
				traj.Error = err.Error()
				traj.failAt(turn, failure.CauseSetup, "")
				return msgs
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
			continue
		}
		if len(t.ToolCalls) == 0 {
			traj.Steps = append(traj.Steps, step)
			traj.Final = stripReasoning(t.Message.Content)
			if t.FinishReason == "length" {
				traj.formatError(fmt.Sprintf("turn %d: final message cut off by the token limit", turn))
			}
			return msgs
		}
		if l.longCalls {
			prefix.Release()
		}
		step.Calls = l.runCalls(ctx, t.ToolCalls)
		traj.Steps = append(traj.Steps, step)
		for _, c := range step.Calls {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: c.Observation, ToolCallID: c.ID, Name: c.Name})
		}
		if !traj.AnswerNow && l.nearContextLimit(t) {
			traj.AnswerNow = true
			text, err := l.prompts.render(PromptAnswerNow, map[string]any{"Report": l.report})
			if err != nil {
				traj.Error = err.Error()
				traj.failAt(turn, failure.CauseSetup, "")
				return msgs
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
		}
	}
}

// runCalls prepares the turn's calls in order, then runs them with at most
// ToolConcurrency at once; records keep the call order.
func (l *loop) runCalls(ctx context.Context, calls []openai.ToolCall) []CallRecord {
	work := make([]func(context.Context) CallRecord, len(calls))
	for i, c := range calls {
		work[i] = l.prepare(c)
	}
	records := make([]CallRecord, len(calls))
	sem := make(chan struct{}, max(1, l.budget.ToolConcurrency))
	var wg sync.WaitGroup
	for i, w := range work {
		wg.Add(1)
		sem <- struct{}{}
		run := func() {
			defer wg.Done()
			defer func() { <-sem }()
			records[i] = w(ctx)
		}
		if i == len(work)-1 {
			// The last call (most often the only one) runs on this
			// goroutine: its stack has grown already, where a new
			// goroutine's would grow again through the tool's argument
			// validation and decoding, a copy at each doubling.
			run()
			continue
		}
		go run()
	}
	wg.Wait()
	return records
}

// nearContextLimit reports whether the last call came within the answer-now
// margin of the context. Without token ids (openai dialect) it uses usage.
func (l *loop) nearContextLimit(t *llm.Turn) bool {
	if l.budget.ContextTokens == 0 {
		return false
	}
	used := len(t.PromptIDs) + len(t.CompletionIDs)
	if used == 0 {
		used = t.Usage.PromptTokens + t.Usage.CompletionTokens
	}
	return used >= l.budget.ContextTokens-l.budget.AnswerNowMargin
}

// fail classifies the trajectory's Error by its cause (see
// internal/failure's class table).
func (t *Trajectory) fail(cause failure.Cause, endpoint string) {
	t.FailureKind, t.FailureCause = failure.KindOf(cause), cause
	if t.FailureKind == failure.KindInfra {
		t.FailureEndpoint = endpoint
	}
}

// failAt classifies the trajectory's Error as fail does and records the
// turn it happened on, so a reader sees which call of the conversation
// failed without parsing Error.
func (t *Trajectory) failAt(turn int, cause failure.Cause, endpoint string) {
	t.fail(cause, endpoint)
	t.FailureTurn = &turn
}

// contextCause is the failure cause of a trajectory whose context ended:
// its rollout's own wall-clock limit (the model's doing: it looped), or
// anything else (a shutdown, a restart at a weight update) that is not.
func contextCause(ctx context.Context) failure.Cause {
	if errors.Is(context.Cause(ctx), ErrWallClock) {
		return failure.CauseWallClock
	}
	return failure.CauseInterrupted
}

// formatError records a format violation.
func (t *Trajectory) formatError(msg string) {
	t.FormatErrors = append(t.FormatErrors, msg)
}

// stripReasoning removes a leading <think>…</think> block (present when the
// server runs without a reasoning parser) and surrounding whitespace.
func stripReasoning(content string) string {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(content), "<think>"); ok {
		if _, after, found := strings.Cut(rest, "</think>"); found {
			return strings.TrimSpace(after)
		}
	}
	return strings.TrimSpace(content)
}

// deriveSeed mixes a base seed with labels into a new seed, so every
// trajectory and turn of a rollout has its own reproducible seed.
func deriveSeed(base int64, parts ...any) int64 {
	h := fnv.New64a()
	fmt.Fprint(h, base)
	for _, p := range parts {
		fmt.Fprintf(h, "/%v", p)
	}
	return int64(h.Sum64() >> 1)
}
