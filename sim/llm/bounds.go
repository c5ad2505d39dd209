package llm

import (
	"fmt"
	"net/http"
)

// checkN rejects an n above the server's cap, before any choice is
// generated: every choice of a request is held in memory until it answers.
func (s *Server) checkN(n int) error {
	if n > s.cfg.MaxN {
		return &apiError{status: http.StatusBadRequest, errType: "BadRequestError", param: "n",
			message: fmt.Sprintf("n must be at most %d, got %d.", s.cfg.MaxN, n)}
	}
	return nil
}

// checkLogprobs rejects a request for more alternatives per position than
// the server's MaxLogprobs, with vLLM's message and its parameter name
// ("logprobs", whichever field carried the number).
func (s *Server) checkLogprobs(k int) error {
	limit := s.cfg.MaxLogprobs
	if limit < 0 {
		limit = s.tok.VocabSize()
	}
	if k > limit {
		return &apiError{status: http.StatusBadRequest, errType: "BadRequestError", param: "logprobs",
			message: fmt.Sprintf("Requested sample logprobs of %d, which is greater than max allowed: %d", k, limit)}
	}
	return nil
}

// plainTokens counts the vocabulary's ids that can be an alternative in
// top_logprobs (every id but the special ones): a request for more cannot be
// filled, so logprobsFor stops there.
func plainTokens(t *Tokenizer) int {
	n := 0
	for id := range t.VocabSize() {
		if !t.IsSpecial(id) {
			n++
		}
	}
	return n
}
