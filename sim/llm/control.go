package llm

import (
	"net/http"
	"strconv"
)

// handleHealth serves GET /health: 200 with an empty body, as both servers
// answer.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// modelCard is an entry of GET /v1/models.
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      *any   `json:"parent"`
	MaxModelLen int    `json:"max_model_len"`
	Permission  []any  `json:"permission,omitempty"`
}

// handleModels serves GET /v1/models.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	card := modelCard{ID: s.cfg.Model, Object: "model", Created: s.cfg.Clock().Unix(), OwnedBy: "sglang", Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen}
	if s.cfg.Dialect == DialectVLLM {
		card.OwnedBy = "vllm"
		card.Permission = []any{map[string]any{
			"id": "modelperm-" + s.responseID(0), "object": "model_permission", "created": card.Created,
			"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
			"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
			"organization": "*", "group": nil, "is_blocking": false,
		}}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []modelCard{card}})
}

// handleSleep serves vLLM's POST /sleep?level=N (default 1): generation
// requests arriving while asleep wait in the queue until POST /wake_up.
func (s *Server) handleSleep(w http.ResponseWriter, r *http.Request) {
	level := 1
	if v := r.URL.Query().Get("level"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 2 {
			s.writeError(w, badRequest("level must be 1 or 2, got %q", v))
			return
		}
		level = n
	}
	s.eng.setSleep(level)
	s.cfg.Logger.Info("sim llm sleep", "level", level)
	w.WriteHeader(http.StatusOK)
}

// handleWakeUp serves vLLM's POST /wake_up (tags accepted and ignored).
func (s *Server) handleWakeUp(w http.ResponseWriter, r *http.Request) {
	s.eng.setSleep(0)
	s.cfg.Logger.Info("sim llm wake up")
	w.WriteHeader(http.StatusOK)
}

// handleIsSleeping serves vLLM's GET /is_sleeping.
func (s *Server) handleIsSleeping(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"is_sleeping": s.eng.sleeping()})
}

// handlePause serves vLLM's POST /pause?mode=abort|wait|keep (default
// abort). New generation requests wait until POST /resume; mode abort ends
// the running ones with finish_reason "abort", wait returns once they have
// finished, keep lets them run.
func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	mode := r.URL.Query().Get("mode")
	if mode == "" {
		mode = "abort"
		if r.URL.Query().Get("wait_for_inflight_requests") == "true" {
			mode = "wait"
		}
	}
	if mode != "abort" && mode != "wait" && mode != "keep" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid pause mode: '" + mode + "'. Must be one of ['abort', 'wait', 'keep']."})
		return
	}
	if err := s.eng.pause(r.Context(), mode); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "Failed to pause generation: " + err.Error()})
		return
	}
	s.cfg.Logger.Info("sim llm paused", "mode", mode)
	writeJSON(w, http.StatusOK, map[string]string{"status": "paused"})
}

// handleResume serves vLLM's POST /resume.
func (s *Server) handleResume(w http.ResponseWriter, r *http.Request) {
	s.eng.resume()
	s.cfg.Logger.Info("sim llm resumed")
	writeJSON(w, http.StatusOK, map[string]string{"status": "resumed"})
}

// handleIsPaused serves vLLM's GET /is_paused.
func (s *Server) handleIsPaused(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"is_paused": s.eng.isPaused()})
}

// handleResetPrefixCache serves vLLM's POST /reset_prefix_cache: 200, empty
// body (the simulator keeps no prefix cache).
func (s *Server) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// handleModelInfo serves SGLang's GET /get_model_info.
func (s *Server) handleModelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		ModelPath               string   `json:"model_path"`
		TokenizerPath           string   `json:"tokenizer_path"`
		IsGeneration            bool     `json:"is_generation"`
		PreferredSamplingParams *any     `json:"preferred_sampling_params"`
		WeightVersion           string   `json:"weight_version"`
		HasImageUnderstanding   bool     `json:"has_image_understanding"`
		HasAudioUnderstanding   bool     `json:"has_audio_understanding"`
		ModelType               string   `json:"model_type"`
		Architectures           []string `json:"architectures"`
	}{s.cfg.Model, s.cfg.Model, true, nil, s.WeightVersion(), false, false, "qwen3", []string{"Qwen3ForCausalLM"}})
}
