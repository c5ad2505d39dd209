package llm

import (
	"net/http"
	"slices"
)

// Generation is one sampled sequence as the server saw and produced it:
// the prompt ids, the completion ids (the stop token included when it was
// emitted) and their logprobs (nil when the request asked for none). Tests
// check a client's training data against it: every trained token and
// logprob must be one the engine sampled.
type Generation struct {
	Route        string    `json:"route"`
	PromptIDs    []int     `json:"prompt_ids"`
	IDs          []int     `json:"ids"`
	Logprobs     []float64 `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

// record appends g's choices to the generation log when
// Config.RecordGenerations is on.
func (s *Server) record(route string, g *genRequest, choices []genChoice) {
	if !s.cfg.RecordGenerations {
		return
	}
	s.genMu.Lock()
	defer s.genMu.Unlock()
	for _, c := range choices {
		e := Generation{Route: route, PromptIDs: slices.Clone(g.promptIDs), IDs: slices.Clone(c.ids), FinishReason: c.finish}
		if c.lps != nil {
			e.Logprobs = make([]float64, len(c.lps))
			for i, lp := range c.lps {
				e.Logprobs[i] = lp.logprob
			}
		}
		s.gens = append(s.gens, e)
	}
}

// Generations returns the generation log, oldest first (empty unless
// Config.RecordGenerations is on).
func (s *Server) Generations() []Generation {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	return slices.Clone(s.gens)
}

// handleGenerations serves GET /sim/generations: the generation log as
// JSON, for tests that run the sim as a process.
func (s *Server) handleGenerations(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Generations())
}
