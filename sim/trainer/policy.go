package trainer

import "math/rand/v2"

// Policy is the model a sim trainer trains: a flat parameter vector and a
// scorer. The server calls it from one goroutine per model at a time, but
// from several models' goroutines at once, so an implementation must be
// safe for concurrent use (it holds no per-model state: the server owns the
// parameters).
type Policy interface {
	// Initial returns the starting parameters for a base model. An unknown
	// base model is an error, which the server answers with 400.
	Initial(baseModel string) ([]float64, error)
	// Score recomputes, from the tokens alone, the logprob of every
	// position of seq whose mask is set, under params. mask has len(seq)
	// entries; position 0 is never set by the server (nothing predicts it).
	Score(params []float64, seq []int, mask []bool) (Scored, error)
	// Save writes params to path in the format the sim inference server
	// loads. The server creates path's directory first.
	Save(params []float64, path string) error
}

// Checker is a Policy that can refuse a sequence when it is submitted,
// before it is queued: one it cannot read at all (for the sim's policy, a
// weighted run whose context is not a generation prompt of its chat
// template — a mask shifted off the completions, another model's tokens).
// The server answers 400 naming the datum. Sequences that read but that
// the policy could not have written are Score's Unmatched instead.
type Checker interface {
	Check(seq []int, mask []bool) error
}

// Scored is what Policy.Score recomputes for one sequence.
type Scored struct {
	// Logprobs has len(seq) entries: the logprob of each masked position
	// given the positions before it, 0 where the mask is unset.
	Logprobs []float64
	// Grads maps a position to d Logprobs[pos] / d params (len(params)
	// entries). Only positions whose logprob depends on params are listed;
	// a masked position missing here has a zero gradient.
	Grads map[int][]float64
	// Unmatched lists the masked runs (turns) the policy cannot produce.
	// The server leaves their positions out of the loss and counts them.
	Unmatched []Unmatched
	// Group and Reward, when RewardKnown, are the question the sequence
	// answers and the main reward it earned, as far as the policy can tell
	// from the tokens. The server uses them to check that advantages are
	// ordered like rewards within a group.
	Group       string
	Reward      float64
	RewardKnown bool
}

// Unmatched is a run of positions [Start, End) of a sequence that the
// policy cannot produce, and why.
type Unmatched struct {
	Start, End int
	Reason     string
}

// Sampler is a Policy that also generates, for the sampling routes
// (create_sampling_session, asample): it draws completions of a prompt
// under given parameters, reporting the logprob of every token as Score
// would recompute it, so that a sampled sequence trained on has
// logprob_diff_abs 0. A Policy that is not a Sampler answers asample with
// a future that fails (category user).
type Sampler interface {
	// Sample draws one completion of prompt under params, at temperature
	// (greedy at 0 or when rng is nil) with rng, of at most maxTokens
	// tokens when maxTokens is positive (the server cuts longer ones
	// too). tokens end where the model ends its turn (eos reports that it
	// did, rather than running out of tokens); logprobs has one entry per
	// token, before temperature, as Score computes it.
	Sample(params []float64, prompt []int, maxTokens int, temperature float64, rng *rand.Rand) (tokens []int, logprobs []float64, eos bool, err error)
	// PromptLogprobs returns the logprob of each prompt token under
	// params (len(prompt) entries; the first is never read).
	PromptLogprobs(params []float64, prompt []int) ([]float64, error)
	// Decode is the text of tokens, for stop strings.
	Decode(tokens []int) (string, error)
	// Load reads parameters a Save wrote to path (the sampler weights of
	// an earlier server's life).
	Load(path string) ([]float64, error)
}

// TokenizerNamer is a Policy that can name the tokenizer it reads tokens
// with: get_info answers it as model_data.tokenizer_id.
type TokenizerNamer interface {
	TokenizerID() string
}
