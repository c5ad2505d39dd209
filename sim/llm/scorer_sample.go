package llm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// TokenizerID names the sim's tokenizer and chat template (a Qwen-style
// ChatML over the vocabulary of vocab_corpus.txt) for clients that ask a
// server which tokenizer its model reads, as the Tinker SDK's get_info
// does. It is not a Hugging Face repository: a client must use this
// package's Tokenizer. The version changes whenever token ids do.
const TokenizerID = "mgrpo/sim-chatml-v1"

// Sample draws one assistant turn for the generation prompt prompt (token
// ids that end with the template's generation prompt, as Score reads a
// turn's context) under params (the scorer's default when nil), at
// temperature with rng (nil: greedy), as a server built from the same
// Config generates it. It returns the turn's token ids, ended by
// <|im_end|>, and the log-probability of its decisions before temperature,
// which the server reports on the turn's first token and Score recovers
// from the ids. The error says why prompt is not a generation prompt.
func (sc *Scorer) Sample(params *policy.Params, prompt []int, temperature float64, rng *rand.Rand) (ids []int, logprob float64, err error) {
	if err := sc.checkSeq(prompt, make([]bool, len(prompt))); err != nil {
		return nil, 0, fmt.Errorf("sample: %w", err)
	}
	if len(prompt) == 0 {
		return nil, 0, errors.New("sample: empty prompt")
	}
	if params == nil {
		params = sc.params
	}
	req, reason := sc.readContext(prompt)
	if reason != "" {
		return nil, 0, fmt.Errorf("sample: %s", reason)
	}
	req.Temperature, req.Rand, req.Params = temperature, rng, params
	act := sc.pol.Act(req)
	ids = append(sc.tok.Encode(RenderAssistant(act)), sc.tok.SpecialID(IMEnd))
	return ids, act.Logprob, nil
}

// PromptLogprobs scores the assistant turns inside a prompt (every run
// after "<|im_start|>assistant\n" up to and including its <|im_end|>)
// under params, as Score does with those runs masked: a turn's first token
// carries the turn's logprob, every other position 0, as do the turns no
// decision path reproduces and every token the model did not write
// (system, user and tool text).
func (sc *Scorer) PromptLogprobs(params *policy.Params, prompt []int) ([]float64, error) {
	header := sc.tok.Encode(IMStart + "assistant\n")
	eos := sc.tok.SpecialID(IMEnd)
	mask := make([]bool, len(prompt))
	for i := 0; i+len(header) <= len(prompt); i++ {
		if !slices.Equal(prompt[i:i+len(header)], header) {
			continue
		}
		j := i + len(header)
		for ; j < len(prompt); j++ {
			mask[j] = true
			if prompt[j] == eos {
				break
			}
		}
		i = j
	}
	s, err := sc.Score(params, prompt, mask)
	if err != nil {
		return nil, err
	}
	return s.Logprobs, nil
}
