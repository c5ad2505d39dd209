package llm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// Scorer recomputes, from token ids alone, the logprobs a server built
// from the same Config reports for its completions, and their gradients
// with respect to the policy's Params: what a trainer of the simulated
// model needs. It uses the server's tokenizer, template parser and policy
// (skills, turn budgets), and is safe for concurrent use.
type Scorer struct {
	tok        *Tokenizer
	pol        *policy.Policy
	params     *policy.Params
	maxReplays int
}

// NewScorer returns a scorer for servers configured as cfg (its defaults
// applied as NewServer applies them; cfg.Params are the default params of
// Score).
func NewScorer(cfg Config) *Scorer {
	cfg = cfg.withDefaults()
	return &Scorer{
		tok:        NewTokenizer(),
		pol:        policy.NewCached(cfg.Skills, cfg.CacheBytes/2),
		params:     cfg.Params,
		maxReplays: policy.DefaultMaxReplays,
	}
}

// Tokenizer returns the scorer's tokenizer (the server's).
func (sc *Scorer) Tokenizer() *Tokenizer { return sc.tok }

// Scored is the score of one training sequence.
type Scored struct {
	// Logprobs has one entry per position of the sequence: the logprob of
	// the token under the params scored with where the mask is set, 0
	// elsewhere. A turn's first token carries the logprob of the turn's
	// decisions; its other tokens 0 (see generate.go).
	Logprobs []float64
	// Grads maps a position whose logprob depends on the params (a scored
	// turn's first token, when the turn made a decision with parameters)
	// to d Logprobs[pos] / d Params.Vector().
	Grads map[int][]float64
	// Turns are the scored turns, Unmatched the turns no decision path
	// reproduces; their positions keep logprob 0 and no gradient.
	Turns     []ScoredTurn
	Unmatched []UnmatchedTurn
}

// ScoredTurn is one masked run of a sequence that a decision path
// reproduces.
type ScoredTurn struct {
	Start, End int // the run is seq[Start:End]
	Logprob    float64
	// Truncated reports a completion without the EOS token (cut by
	// max_tokens, a stop string or an abort): it was scored as the first
	// path in Score's search order whose output starts with it.
	Truncated bool
	// Decisions are the turn's decisions; Replays how many replays it took.
	Decisions []policy.Decision
	Replays   int
}

// UnmatchedTurn is one masked run of a sequence that could not be scored.
type UnmatchedTurn struct {
	Start, End int
	Reason     string
}

// Score scores a whole multi-turn training sequence seq (prompt,
// completion, tool results, next completion …) under params (the scorer's
// default when nil); mask marks the generated tokens. Every maximal run of
// masked tokens seq[start:end] is one assistant turn: its context
// seq[:start] must end with the template's generation prompt (with the
// empty think block enable_thinking=false prefills, which drops the turn's
// reasoning), and is parsed back into messages and tools as the server
// parses raw prompts; the run must be the token ids the server would emit,
// RenderAssistant's text tokenized and ended by <|im_end|>. A run the
// policy cannot reproduce — a corrupted token, a mask shifted by one, a
// context that is not a generation prompt — is reported in Unmatched with
// the reason, never scored. A run without the EOS token is scored as a
// prefix (see ScoredTurn.Truncated); its logprob equals the sampler's
// whenever the prefix fixes the decision path, and not necessarily
// otherwise (an empty or very short prefix says little of the turn).
//
// The error is for input that is not a sequence at all: mask and seq of
// different lengths, token ids outside the vocabulary.
func (sc *Scorer) Score(params *policy.Params, seq []int, mask []bool) (*Scored, error) {
	return sc.ScoreAt(params, seq, mask, 1)
}

// ScoreAt is Score with the policy's logits divided by temperature, as a
// trainer scores a sequence sampled at that temperature: each turn's
// logprob is the tempered one (policy.ReportedLogprob with
// policy.LogprobsTempered), equal to what a server in processed mode
// reports when no top-k, top-p or min-p filtered the request, and its
// gradient that of the tempered logprob. Temperature 1 (or 0, greedy, or
// less) is Score.
func (sc *Scorer) ScoreAt(params *policy.Params, seq []int, mask []bool, temperature float64) (*Scored, error) {
	if !(temperature > 0) {
		temperature = 1
	}
	if err := sc.checkSeq(seq, mask); err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	if params == nil {
		params = sc.params
	}
	out := &Scored{Logprobs: make([]float64, len(seq)), Grads: map[int][]float64{}}
	for _, run := range maskedRuns(mask) {
		start, end := run[0], run[1]
		t, reason := sc.scoreTurn(params, seq, start, end)
		if reason != "" {
			out.Unmatched = append(out.Unmatched, UnmatchedTurn{Start: start, End: end, Reason: reason})
			continue
		}
		if temperature != 1 {
			t.Logprob = policy.ReportedLogprob(t.Decisions, policy.LogprobsTempered, temperature, policy.Filters{})
		}
		out.Turns = append(out.Turns, t)
		out.Logprobs[start] = t.Logprob
		if grad := turnGrad(params, t.Decisions, temperature); grad != nil {
			out.Grads[start] = grad
		}
	}
	return out, nil
}

// checkSeq checks that seq and mask are as long as each other and that
// every id is in the vocabulary.
func (sc *Scorer) checkSeq(seq []int, mask []bool) error {
	if len(mask) != len(seq) {
		return fmt.Errorf("mask has %d entries, seq %d", len(mask), len(seq))
	}
	vocab := sc.tok.VocabSize()
	for i, id := range seq {
		if id < 0 || id >= vocab {
			return fmt.Errorf("seq[%d] = %d is outside the vocabulary (0..%d)", i, id, vocab-1)
		}
	}
	return nil
}

// maskedRuns returns the maximal runs [start, end) of set mask entries:
// the assistant turns of a training sequence.
func maskedRuns(mask []bool) [][2]int {
	var runs [][2]int
	for start := 0; start < len(mask); {
		if !mask[start] {
			start++
			continue
		}
		end := start
		for end < len(mask) && mask[end] {
			end++
		}
		runs = append(runs, [2]int{start, end})
		start = end
	}
	return runs
}

// turnGrad is the gradient of a turn's logprob, nil when no decision of the
// turn has parameters.
func turnGrad(params *policy.Params, ds []policy.Decision, temperature float64) []float64 {
	var grad []float64
	for i := range ds {
		if ds[i].Offset < 0 {
			continue
		}
		if grad == nil {
			grad = make([]float64, params.Len())
		}
		ds[i].AddTemperedGrad(grad, temperature)
	}
	return grad
}

// scoreTurn scores seq[start:end] in its context seq[:start]; reason says
// why it could not.
func (sc *Scorer) scoreTurn(params *policy.Params, seq []int, start, end int) (ScoredTurn, string) {
	t := ScoredTurn{Start: start, End: end}
	in, reason := sc.readTurn(seq, start, end)
	if reason != "" {
		return t, reason
	}
	ids, text, req := in.ids, in.text, in.req
	eos := sc.tok.SpecialID(IMEnd)
	t.Truncated = in.truncated
	match := func(o policy.Output) bool {
		if t.Truncated {
			return strings.HasPrefix(RenderAssistant(o), text)
		}
		return RenderAssistant(o) == text
	}
	r := sc.pol.ScoreMatch(req, params, match, sc.maxReplays)
	t.Replays = r.Replays
	if !r.OK {
		return t, r.Reason
	}
	// The text matches; the tokens must be the ones the server emits for
	// it (a different tokenization of the same text is not this model's).
	want := append(sc.tok.Encode(RenderAssistant(r.Output)), eos)
	if t.Truncated {
		if len(ids) > len(want) || !slices.Equal(want[:len(ids)], ids) {
			return t, "the completion's tokens are not a prefix of the tokenization the model emits for its text"
		}
	} else if !slices.Equal(want, ids) {
		return t, "the completion's tokens are not the tokenization the model emits for its text"
	}
	t.Logprob, t.Decisions = r.Logprob, r.Decisions
	return t, ""
}

// turnInput is one masked run read under the template: the request its
// context makes, and the completion's ids and text.
type turnInput struct {
	req       policy.Request
	ids       []int
	text      string
	truncated bool // no EOS at the end
}

// readTurn reads the masked run seq[start:end] and its context under the
// chat template, or says why it cannot be read: the context is not a
// generation prompt, or the completion holds a special token before its
// end.
func (sc *Scorer) readTurn(seq []int, start, end int) (turnInput, string) {
	req, reason := sc.readContext(seq[:start])
	if reason != "" {
		return turnInput{}, reason
	}
	in := turnInput{ids: seq[start:end], req: req}
	body := in.ids
	if eos := sc.tok.SpecialID(IMEnd); in.ids[len(in.ids)-1] == eos {
		body = in.ids[:len(in.ids)-1]
	} else {
		in.truncated = true
	}
	for i, id := range body {
		if sc.tok.IsSpecial(id) {
			return turnInput{}, fmt.Sprintf("completion token %d (position %d) is the special token %d, which the model only emits last", i, start+i, id)
		}
	}
	text, err := sc.tok.Decode(body)
	if err != nil {
		return turnInput{}, fmt.Sprintf("completion: %v", err)
	}
	in.text = text
	return in, ""
}

// readContext reads a turn's context under the template: the request it
// makes, or why it is not a generation prompt.
func (sc *Scorer) readContext(context []int) (policy.Request, string) {
	prompt, err := sc.tok.Decode(context)
	if err != nil {
		return policy.Request{}, fmt.Sprintf("context: %v", err)
	}
	genPrompt := IMStart + "assistant\n"
	noThinking := strings.HasSuffix(prompt, genPrompt+emptyThink)
	if !noThinking && !strings.HasSuffix(prompt, genPrompt) {
		return policy.Request{}, "the context does not end with the generation prompt " + fmt.Sprintf("%q", genPrompt)
	}
	msgs, tools, err := ParsePrompt(prompt)
	if err != nil {
		return policy.Request{}, fmt.Sprintf("context: %v", err)
	}
	return policy.Request{Messages: msgs, Tools: tools, NoReasoning: noThinking}, ""
}

// Check reports whether every masked run of seq can be read under the chat
// template at all — its context a generation prompt, its completion free of
// special tokens before the end — without scoring it. A trainer uses it to
// refuse a sequence that is not this model's conversation (a mask shifted
// off its completions, tokens of another template) before queueing it;
// runs that read but no decision path reproduces are Score's Unmatched.
func (sc *Scorer) Check(seq []int, mask []bool) error {
	if err := sc.checkSeq(seq, mask); err != nil {
		return err
	}
	for _, run := range maskedRuns(mask) {
		if _, reason := sc.readTurn(seq, run[0], run[1]); reason != "" {
			return fmt.Errorf("the weighted run at positions %d–%d cannot be read under the sim's chat template: %s", run[0], run[1]-1, reason)
		}
	}
	return nil
}
