package trainer

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/sim/llm/policy"
	"github.com/mgrpo/mgrpo/sim/web"
)

// SimPolicy is the simulated model's Policy: the parametric policy of
// package sim/llm/policy, scored by sim/llm's Scorer with the tokenizer and
// template of the inference servers it trains for, and saved as the params
// files those servers load on a weight update. Every base model starts
// from the default parameters of the servers' skills.
type SimPolicy struct {
	scorer  *simllm.Scorer
	initial []float64
	// gold maps a question of the web to its answer, normalized; questions
	// lists them for the lookup by containment.
	gold      map[string]string
	questions []string
	// temperature divides the policy's logits when it scores (see
	// WithTemperature); 0 means 1.
	temperature float64
}

var (
	_ Policy         = (*SimPolicy)(nil)
	_ Checker        = (*SimPolicy)(nil)
	_ Sampler        = (*SimPolicy)(nil)
	_ TokenizerNamer = (*SimPolicy)(nil)
)

// NewSimPolicy returns the policy of inference servers configured as cfg.
// With a web (nil: none), it also tells a planner datum's question and main
// reward from its tokens, so the trainer can check advantages against
// rewards (see Scored.Reward).
func NewSimPolicy(cfg simllm.Config, w *web.World) *SimPolicy {
	p := &SimPolicy{scorer: simllm.NewScorer(cfg), gold: map[string]string{}}
	if cfg.Params != nil {
		p.initial = cfg.Params.Vector()
	} else {
		p.initial = policy.DefaultParams(cfg.Skills).Vector()
		if cfg.Skills == (policy.Skills{}) {
			p.initial = policy.DefaultParams(policy.DefaultSkills()).Vector()
		}
	}
	if w != nil {
		for _, q := range w.Questions {
			p.gold[q.Question] = normalizeAnswer(q.Answer)
			p.questions = append(p.questions, q.Question)
		}
	}
	return p
}

// WithTemperature returns p scoring every sequence with its logits divided
// by t, the temperature the inference servers sampled at: the trainer's
// logprobs and gradients are then those of the distribution sampled from
// (when no top-k, top-p or min-p filtered it), so its logprob check and
// importance ratios hold against a server reporting processed logprobs.
// Tinker's API carries no sampling temperature (its built-in losses score
// at temperature 1), so the sim trainer is told at launch.
func (p *SimPolicy) WithTemperature(t float64) *SimPolicy {
	q := *p
	q.temperature = t
	return &q
}

// Initial returns the default parameters, whatever the base model (the
// server has already checked it is one it serves).
func (p *SimPolicy) Initial(string) ([]float64, error) {
	return append([]float64(nil), p.initial...), nil
}

// Save writes params as a params file (policy.Params.WriteFile).
func (p *SimPolicy) Save(params []float64, path string) error {
	pp, err := policy.ParamsFromVector(params)
	if err != nil {
		return fmt.Errorf("save sim policy: %w", err)
	}
	return pp.WriteFile(path)
}

// Sample draws one assistant turn of the generation prompt prompt with
// the sim's Scorer (simllm.Scorer.Sample): the turn's logprob on its first
// token, 0 on the others, as the inference servers report it and Score
// recomputes it. Every turn ends with <|im_end|>.
func (p *SimPolicy) Sample(params []float64, prompt []int, _ int, temperature float64, rng *rand.Rand) ([]int, []float64, bool, error) {
	pp, err := policy.ParamsFromVector(params)
	if err != nil {
		return nil, nil, false, fmt.Errorf("sim policy: %w", err)
	}
	ids, lp, err := p.scorer.Sample(pp, prompt, temperature, rng)
	if err != nil {
		return nil, nil, false, err
	}
	lps := make([]float64, len(ids))
	lps[0] = lp
	return ids, lps, true, nil
}

// PromptLogprobs scores the assistant turns of prompt
// (simllm.Scorer.PromptLogprobs); other tokens have logprob 0.
func (p *SimPolicy) PromptLogprobs(params []float64, prompt []int) ([]float64, error) {
	pp, err := policy.ParamsFromVector(params)
	if err != nil {
		return nil, fmt.Errorf("sim policy: %w", err)
	}
	return p.scorer.PromptLogprobs(pp, prompt)
}

// Decode is the text of tokens, special tokens included.
func (p *SimPolicy) Decode(tokens []int) (string, error) { return p.scorer.Tokenizer().Decode(tokens) }

// Load reads a params file Save wrote.
func (p *SimPolicy) Load(path string) ([]float64, error) {
	pp, err := policy.ReadParams(path)
	if err != nil {
		return nil, fmt.Errorf("load sim policy: %w", err)
	}
	return pp.Vector(), nil
}

// TokenizerID names the sim's tokenizer (simllm.TokenizerID).
func (p *SimPolicy) TokenizerID() string { return simllm.TokenizerID }

// Check refuses a sequence the sim's chat template cannot read (see
// simllm.Scorer.Check).
func (p *SimPolicy) Check(seq []int, mask []bool) error { return p.scorer.Check(seq, mask) }

// Score scores seq with the sim's Scorer and, for a planner sequence that
// ends with its final answer, tells its question and main reward.
func (p *SimPolicy) Score(params []float64, seq []int, mask []bool) (Scored, error) {
	pp, err := policy.ParamsFromVector(params)
	if err != nil {
		return Scored{}, fmt.Errorf("sim policy: %w", err)
	}
	sc, err := p.scorer.ScoreAt(pp, seq, mask, p.temperature)
	if err != nil {
		return Scored{}, err
	}
	out := Scored{Logprobs: sc.Logprobs, Grads: sc.Grads}
	for _, u := range sc.Unmatched {
		out.Unmatched = append(out.Unmatched, Unmatched{Start: u.Start, End: u.End, Reason: u.Reason})
	}
	if len(sc.Unmatched) == 0 {
		out.Group, out.Reward, out.RewardKnown = p.reward(seq, sc)
	}
	return out, nil
}

var (
	answerTag    = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
	firstUserMsg = regexp.MustCompile(`(?s)<\|im_start\|>user\n(.*?)<\|im_end\|>`)
)

// reward recomputes the main reward of a planner (or single-agent)
// sequence the way the
// farm's default rewards score the sim's tasks: 0 when a turn broke the
// format (a malformed call or an untagged answer), else 0.1 for the format
// plus 0.9 when the tagged answer is the question's gold answer. It knows
// nothing of other sequences: executor sequences, planner sequences cut
// before their answer (a drift split, a budget) and unknown questions.
func (p *SimPolicy) reward(seq []int, sc *simllm.Scored) (group string, reward float64, known bool) {
	if len(p.gold) == 0 || len(sc.Turns) == 0 {
		return "", 0, false
	}
	planner := true
	for _, t := range sc.Turns {
		for _, d := range t.Decisions {
			planner = planner && d.Role == policy.RolePlanner
		}
	}
	tok := p.scorer.Tokenizer()
	text, err := tok.Decode(seq)
	if err != nil {
		return "", 0, false
	}
	m := firstUserMsg.FindStringSubmatch(text)
	if m == nil {
		return "", 0, false
	}
	question := ""
	for _, q := range p.questions {
		if strings.Contains(m[1], q) {
			question = q
			break
		}
	}
	if question == "" {
		return "", 0, false
	}
	last := sc.Turns[len(sc.Turns)-1]
	final, err := tok.DecodeSkipSpecial(seq[last.Start:last.End])
	if err != nil || strings.Contains(final, "<tool_call>") {
		return "", 0, false
	}
	// An executor's turns decide with the executor block, and so do the
	// single agent's, whose answer alone is tagged: a sequence that is not
	// the planner's counts only with a tagged answer (an executor's report
	// never has one).
	if !planner && !answerTag.MatchString(final) {
		return "", 0, false
	}
	for _, t := range sc.Turns {
		for _, d := range t.Decisions {
			if (d.Kind == policy.KindMalformed || d.Kind == policy.KindFormatError) && d.Taken == 1 {
				return question, 0, true
			}
		}
	}
	a := answerTag.FindStringSubmatch(final)
	if a == nil {
		return "", 0, false
	}
	if normalizeAnswer(a[1]) == p.gold[question] {
		return question, 1, true
	}
	return question, 0.1, true
}

// normalizeAnswer lower-cases s and collapses its spaces.
func normalizeAnswer(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}
