package llm

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mgrpo/mgrpo/sim/llm/policy"
)

// weightState is what the server knows of its weights besides the version:
// the path of the last load, and how many loads there were.
type weightState struct {
	mu    sync.Mutex
	path  string
	loads int
}

// ModelPath returns the path of the last weight update ("" before any).
func (s *Server) ModelPath() string {
	s.weights.mu.Lock()
	defer s.weights.mu.Unlock()
	return s.weights.path
}

// WeightLoads returns how many weight updates the server has taken.
func (s *Server) WeightLoads() int {
	s.weights.mu.Lock()
	defer s.weights.mu.Unlock()
	return s.weights.loads
}

// readWeights reads the params file a weight update's modelPath names (see
// paramsPath). It returns nil params for a path that is only to be
// recorded, as a real server's weights would be loaded from a directory
// the sim has no use for; a file that cannot be read or has the wrong
// shape is an error.
func (s *Server) readWeights(modelPath string) (*policy.Params, error) {
	var params *policy.Params
	path, must, err := s.paramsPath(modelPath)
	if err != nil {
		return nil, err
	}
	if path != "" {
		st, err := os.Stat(path)
		switch {
		case err == nil && st.Mode().IsRegular():
			if params, err = policy.ReadParams(path); err != nil {
				return nil, fmt.Errorf("load params from %s: %w", modelPath, err)
			}
		case err == nil && must:
			return nil, fmt.Errorf("load params from %s: %s is not a regular file", modelPath, path)
		case err != nil && (must || !errors.Is(err, fs.ErrNotExist)):
			return nil, fmt.Errorf("load params from %s: %w", modelPath, err)
		}
	}
	return params, nil
}

// commitWeights records a weight update from modelPath and makes params
// (when not nil) and version (when not nil) the served ones, under one lock
// so that no request sees one without the other.
func (s *Server) commitWeights(modelPath string, params *policy.Params, version *string) {
	s.weights.mu.Lock()
	s.weights.path = modelPath
	s.weights.loads++
	s.weights.mu.Unlock()
	s.versionMu.Lock()
	if params != nil {
		s.params = params
	}
	if version != nil {
		s.version = *version
	}
	s.holdLocked()
	s.versionMu.Unlock()
	s.cfg.Logger.Info("sim llm weights updated", "model_path", modelPath, "params_loaded", params != nil, "weight_version", s.WeightVersion())
}

// paramsPath resolves a weight update's model_path to the params file it
// may name: tinker://MODEL/sampler_weights/NAME is CheckpointDir/MODEL/NAME.json
// (and must exist) when CheckpointDir is set, and only recorded otherwise; a
// file:// URL is its path (and must exist); any other string is a local
// path, loaded when it is a regular file and only recorded when it does
// not exist or is a directory. path is "" when nothing is to be loaded.
func (s *Server) paramsPath(modelPath string) (path string, must bool, err error) {
	if rest, ok := strings.CutPrefix(modelPath, "tinker://"); ok {
		if s.cfg.CheckpointDir == "" {
			return "", false, nil
		}
		model, name, found := strings.Cut(rest, "/sampler_weights/")
		if !found || model == "" || name == "" || strings.ContainsAny(name, `/\`) || name == ".." || name == "." ||
			strings.Contains(model, "..") || strings.Contains(model, `\`) {
			return "", false, fmt.Errorf("model_path %q: want tinker://MODEL/sampler_weights/NAME", modelPath)
		}
		return filepath.Join(s.cfg.CheckpointDir, filepath.FromSlash(model), name+".json"), true, nil
	}
	if strings.HasPrefix(modelPath, "file://") {
		u, err := url.Parse(modelPath)
		if err != nil || u.Path == "" {
			return "", false, fmt.Errorf("model_path %q: not a file URL with a path", modelPath)
		}
		return filepath.FromSlash(u.Path), true, nil
	}
	return modelPath, false, nil
}

// updateWeightsRequest is SGLang's UpdateWeightFromDiskReqInput.
type updateWeightsRequest struct {
	ModelPath     string  `json:"model_path"`
	LoadFormat    *string `json:"load_format"`
	AbortAll      bool    `json:"abort_all_requests"`
	WeightVersion *string `json:"weight_version"`
	IsAsync       bool    `json:"is_async"`
	TorchEmpty    bool    `json:"torch_empty_cache"`
	KeepPause     bool    `json:"keep_pause"`
	Recapture     bool    `json:"recapture_cuda_graph"`
	TokenStep     int     `json:"token_step"`
	Flush         *bool   `json:"flush_cache"`
}

// updateWeightsResponse is SGLang's answer to /update_weights_from_disk,
// 200 on success and 400 with success false otherwise.
type updateWeightsResponse struct {
	Success           bool   `json:"success"`
	Message           string `json:"message"`
	NumPausedRequests int    `json:"num_paused_requests"`
}

// handleUpdateWeights serves SGLang's POST /update_weights_from_disk. A
// weight_version in the body becomes the served version; with
// abort_all_requests the requests running now end first, with
// finish_reason "abort" and the tokens generated so far.
func (s *Server) handleUpdateWeights(w http.ResponseWriter, r *http.Request) {
	var req updateWeightsRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.ModelPath == "" {
		writeJSON(w, http.StatusBadRequest, updateWeightsResponse{Message: "Failed to update weights: model_path is required."})
		return
	}
	params, err := s.readWeights(req.ModelPath)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, updateWeightsResponse{Message: "Failed to update weights: " + err.Error()})
		return
	}
	if req.AbortAll {
		s.eng.abortRunning()
	}
	s.commitWeights(req.ModelPath, params, req.WeightVersion)
	msg := "Succeeded to update model weights."
	if req.WeightVersion != nil {
		msg += " Weight version updated to " + *req.WeightVersion + "."
	}
	w.Header().Set("X-Weight-Version", s.WeightVersion())
	writeJSON(w, http.StatusOK, updateWeightsResponse{Success: true, Message: msg})
}

// handleGetWeightVersion serves SGLang's GET /get_weight_version (and
// vLLM's GET /weight_info, which answers the same body).
func (s *Server) handleGetWeightVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"weight_version": s.WeightVersion()})
}

// pauseGenerationRequest is SGLang's PauseGenerationReqInput. Servers
// before the modes took no body; an empty body means mode "abort".
type pauseGenerationRequest struct {
	Mode string `json:"mode"`
}

// handlePauseGeneration serves SGLang's POST /pause_generation: new
// generation requests wait until POST /continue_generation. Mode "abort"
// (the default) ends the running ones with finish_reason "abort" and the
// tokens generated so far; "in_place" and "retract" keep them: the sim lets
// them run to the end (SGLang freezes or requeues them and finishes them
// after the continue, so their tokens then span two weight versions).
func (s *Server) handlePauseGeneration(w http.ResponseWriter, r *http.Request) {
	var req pauseGenerationRequest
	if r.ContentLength != 0 {
		if err := s.decodeBody(r, &req); err != nil {
			s.writeError(w, err)
			return
		}
	}
	mode := "abort"
	switch req.Mode {
	case "", "abort":
	case "in_place", "retract":
		mode = "keep"
	default:
		s.writeError(w, badRequest("Invalid mode: '%s'. Expected one of ['abort', 'retract', 'in_place'].", req.Mode))
		return
	}
	if err := s.eng.pause(r.Context(), mode); err != nil {
		s.writeError(w, err)
		return
	}
	s.cfg.Logger.Info("sim llm generation paused", "mode", req.Mode)
	writeJSON(w, http.StatusOK, map[string]string{"message": "Generation paused successfully.", "status": "ok"})
}

// handleContinueGeneration serves SGLang's POST /continue_generation.
func (s *Server) handleContinueGeneration(w http.ResponseWriter, r *http.Request) {
	s.eng.resume()
	s.cfg.Logger.Info("sim llm generation continued")
	writeJSON(w, http.StatusOK, map[string]string{"message": "Generation continued successfully.", "status": "ok"})
}

// updateVersionRequest is the body of POST /update_weight_version in both
// servers (SGLang's UpdateWeightVersionReqInput; vLLM's dev route embeds
// new_version the same way).
type updateVersionRequest struct {
	NewVersion *string `json:"new_version"`
	AbortAll   bool    `json:"abort_all_requests"`
}

// handleUpdateWeightVersion serves POST /update_weight_version: it renames
// the served weights without loading any.
func (s *Server) handleUpdateWeightVersion(w http.ResponseWriter, r *http.Request) {
	var req updateVersionRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.NewVersion == nil {
		s.writeError(w, badRequest("new_version is required"))
		return
	}
	if req.AbortAll {
		s.eng.abortRunning()
	}
	s.SetWeightVersion(*req.NewVersion)
	if s.cfg.Dialect == DialectSGLang {
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "message": "Weight version updated to " + *req.NewVersion, "new_version": *req.NewVersion})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "new_version": *req.NewVersion})
}

// simUpdateWeightsRequest is the body of the vLLM dialect's sim-only
// POST /sim/update_weights.
type simUpdateWeightsRequest struct {
	ModelPath     string  `json:"model_path"`
	WeightVersion *string `json:"weight_version"`
}

// handleSimUpdateWeights serves the vLLM dialect's POST /sim/update_weights
// {"model_path", "weight_version"}: the sim's stand-in for the update
// action a vLLM deployment configures (a worker extension reached through
// a dev route, a script), since vLLM has no single load-from-disk route.
// It answers 200 {"status": "updated", "weight_version"} or 400.
func (s *Server) handleSimUpdateWeights(w http.ResponseWriter, r *http.Request) {
	var req simUpdateWeightsRequest
	if err := s.decodeBody(r, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.ModelPath == "" {
		s.writeError(w, badRequest("model_path is required"))
		return
	}
	params, err := s.readWeights(req.ModelPath)
	if err != nil {
		s.writeError(w, badRequest("%v", err))
		return
	}
	s.commitWeights(req.ModelPath, params, req.WeightVersion)
	w.Header().Set("X-Weight-Version", s.WeightVersion())
	writeJSON(w, http.StatusOK, map[string]string{"status": "updated", "weight_version": s.WeightVersion()})
}
