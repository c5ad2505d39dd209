package llm

import (
	"fmt"
	"strings"
)

// OffPolicy lists the settings of s that make the sampled distribution
// differ from the model's (empty when s samples on-policy: temperature 1,
// top_p 1, top_k off, min_p 0, neutral penalties). Unset settings count as
// the server's, which may be anything (a model's generation_config.json),
// so they are listed too.
func (s Sampling) OffPolicy() []string {
	var out []string
	is := func(key string, p *float64, neutral float64) {
		switch {
		case p == nil:
			out = append(out, key+" unset (the server's default)")
		case *p != neutral:
			out = append(out, fmt.Sprintf("%s %v", key, *p))
		}
	}
	is("temperature", s.Temperature, 1)
	is("top_p", s.TopP, 1)
	switch {
	case s.TopK == nil:
		out = append(out, "top_k unset (the server's default)")
	case *s.TopK > 0:
		out = append(out, fmt.Sprintf("top_k %d", *s.TopK))
	}
	is("min_p", s.MinP, 0)
	is("repetition_penalty", s.RepetitionPenalty, 1)
	is("presence_penalty", s.PresencePenalty, 0)
	is("frequency_penalty", s.FrequencyPenalty, 0)
	return out
}

// LogprobsMismatch says why the logprobs a server of dialect reports would
// not describe the distribution s samples from ("" when they do): sampling
// that is not neutral against a vLLM reporting raw logprobs (unless
// processed: launched with --logprobs-mode processed_logprobs; no route of
// vLLM's tells which mode a server runs), or top-k/top-p/min-p and
// penalties against SGLang, whose logprobs are taken after temperature but
// before those. role names the configuration's key in the advice.
func LogprobsMismatch(dialect string, processed bool, s Sampling, role string) string {
	off := s.OffPolicy()
	switch dialect {
	case DialectVLLM:
		if len(off) > 0 && !processed {
			return fmt.Sprintf("samples with %s, but a vLLM server reports raw logprobs (before temperature, penalties and top-k/top-p) unless launched with --logprobs-mode processed_logprobs: launch it so and set %s.logprobs_mode: processed, or sample on-policy (temperature 1, top_p 1, top_k -1, min_p 0, neutral penalties)",
				strings.Join(off, ", "), role)
		}
	case DialectSGLang:
		var filters []string
		for _, o := range off {
			if !strings.HasPrefix(o, "temperature") {
				filters = append(filters, o)
			}
		}
		if len(filters) > 0 {
			return fmt.Sprintf("samples with %s, but SGLang reports logprobs after temperature and before top-k/top-p/min-p and penalties (and raw ones with SGLANG_RETURN_ORIGINAL_LOGPROB set): sample with top_p 1, top_k -1, min_p 0 and neutral penalties",
				strings.Join(filters, ", "))
		}
	}
	return ""
}
