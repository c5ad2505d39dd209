package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Training state saved by save_weights (the SDK's save_state) and loaded
// by load_weights (load_state, load_state_with_optimizer): the
// parameters and the Adam state, by tinker:// path. A restarted SDK client
// resumes by creating a model and loading its last state into it, so a
// state outlives the model that saved it (and, with CheckpointDir, the
// server: it is also written to CheckpointDir/MODEL/weights/NAME.json).

// snapshotFormat tags a saved state file.
const snapshotFormat = "mgrpo-sim-trainer-state/v1"

// snapshot is one saved training state.
type snapshot struct {
	Format string    `json:"format"`
	Base   string    `json:"base_model"`
	Rank   int       `json:"lora_rank"`
	Params []float64 `json:"params"`
	AdamM  []float64 `json:"adam_m"`
	AdamV  []float64 `json:"adam_v"`
	AdamT  int       `json:"adam_t"`
}

// checkpoint is one of a model's saves, as training_runs lists them (the
// SDK's Checkpoint).
type checkpoint struct {
	ID   string    `json:"checkpoint_id"`
	Type string    `json:"checkpoint_type"`
	Time time.Time `json:"time"`
	Path string    `json:"tinker_path"`
	// Public is the SDK's public flag: the sim's checkpoints are private.
	Public bool `json:"public"`
}

// clientConfig answers the SDK's first request: the server's flags. The
// sim serves what the SDK does by default but for zstd bodies,
// create-via-load and the batched futures poll, which it does not offer;
// JWT auth is on when Config.JWTLifetime is set.
func (s *Server) clientConfig(w http.ResponseWriter, body []byte) {
	var req struct {
		SDKVersion string `json:"sdk_version"`
	}
	if len(body) > 0 {
		if e := decode("client/config", body, &req); e != nil {
			writeError(w, e)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"pjwt_auth_enabled":             s.jwt != nil,
		"credential_default_source":     "api_key",
		"parallel_fwdbwd_chunks":        true,
		"proto_compress_fwdbwd":         false,
		"fwdbwd_max_chunk_len":          s.cfg.ChunkDatums,
		"fwdbwd_max_chunk_bytes_count":  s.cfg.ChunkBytes,
		"create_model_via_load_weights": false,
		"sample_use_retrieve_futures":   false,
		"use_pyqwest_transport":         false,
	})
}

// statePath and samplerPath are the tinker:// paths of a model's saves.
func statePath(modelID, name string) string { return "tinker://" + modelID + "/weights/" + name }
func samplerPath(modelID, name string) string {
	return "tinker://" + modelID + "/sampler_weights/" + name
}

// saveStateRun returns the run of a save_weights: the parameters and Adam
// state kept under tinker://MODEL/weights/NAME.
func (s *Server) saveStateRun(name string) func(*model) (any, *failure) {
	return func(m *model) (any, *failure) {
		m.st.Lock()
		snap := &snapshot{Format: snapshotFormat, Base: m.base, Rank: m.rank,
			Params: slices.Clone(m.params), AdamM: slices.Clone(m.adam.m), AdamV: slices.Clone(m.adam.v), AdamT: m.adam.t}
		m.st.Unlock()
		path := statePath(m.id, name)
		if s.cfg.CheckpointDir != "" {
			b, err := json.Marshal(snap)
			if err == nil {
				file := filepath.Join(s.cfg.CheckpointDir, m.id, "weights", name+".json")
				if err = os.MkdirAll(filepath.Dir(file), 0o755); err == nil {
					err = os.WriteFile(file, b, 0o644)
				}
			}
			if err != nil {
				return nil, &failure{categoryServer, fmt.Sprintf("save_weights: %v", err)}
			}
		}
		s.mu.Lock()
		s.states[path] = snap
		s.mu.Unlock()
		m.addCheckpoint(checkpoint{ID: "weights/" + name, Type: "training", Time: s.cfg.Now().UTC(), Path: path})
		return map[string]string{"path": path, "type": "save_weights"}, nil
	}
}

func (m *model) addCheckpoint(c checkpoint) {
	m.st.Lock()
	defer m.st.Unlock()
	m.checkpoints = slices.DeleteFunc(m.checkpoints, func(o checkpoint) bool { return o.ID == c.ID })
	m.checkpoints = append(m.checkpoints, c)
}

// state returns the saved state at a tinker:// path: kept in memory, or
// read from CheckpointDir (a state of an earlier server's life).
func (s *Server) state(path string) (*snapshot, error) {
	s.mu.Lock()
	snap := s.states[path]
	s.mu.Unlock()
	if snap != nil {
		return snap, nil
	}
	rest, ok := strings.CutPrefix(path, "tinker://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[1] != "weights" || !validCheckpointName(parts[2]) || !validCheckpointName(parts[0]) {
		return nil, fmt.Errorf("path %q: want tinker://MODEL/weights/NAME, as save_weights answers", clip(path))
	}
	if s.cfg.CheckpointDir == "" {
		return nil, fmt.Errorf("no saved state at %s", path)
	}
	b, err := os.ReadFile(filepath.Join(s.cfg.CheckpointDir, parts[0], "weights", parts[2]+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no saved state at %s", path)
	}
	if err != nil {
		return nil, err
	}
	snap = &snapshot{}
	if err := json.Unmarshal(b, snap); err != nil || snap.Format != snapshotFormat {
		return nil, fmt.Errorf("saved state %s: unreadable (format %q, %v)", path, snap.Format, err)
	}
	s.mu.Lock()
	s.states[path] = snap
	s.mu.Unlock()
	return snap, nil
}

// loadRun returns the run of a load_weights: the parameters of the state
// at path, and its Adam state when optimizer is set (else a fresh one).
// The gradient accumulated so far is dropped.
func (s *Server) loadRun(path string, optimizer bool) func(*model) (any, *failure) {
	return func(m *model) (any, *failure) {
		snap, err := s.state(path)
		if err != nil {
			return nil, &failure{categoryUser, "load_weights: " + err.Error()}
		}
		m.st.Lock()
		defer m.st.Unlock()
		if snap.Base != m.base || len(snap.Params) != len(m.params) {
			return nil, &failure{categoryUser, fmt.Sprintf("load_weights: %s is of %s (%d parameters), model %s of %s (%d)", path, snap.Base, len(snap.Params), m.id, m.base, len(m.params))}
		}
		m.params = slices.Clone(snap.Params)
		m.adam = adamState{}
		if optimizer {
			m.adam = adamState{m: slices.Clone(snap.AdamM), v: slices.Clone(snap.AdamV), t: snap.AdamT}
		}
		m.grads, m.records, m.accumulated = nil, nil, 0
		return map[string]string{"path": path, "type": "load_weights"}, nil
	}
}

// weightsInfo answers what a saved state or sampler checkpoint is of (the
// SDK's WeightsInfoResponse), for create_training_client_from_state.
func (s *Server) weightsInfo(w http.ResponseWriter, body []byte) {
	var req weightsInfoRequest
	if e := decode("weights_info", body, &req); e != nil {
		writeError(w, e)
		return
	}
	base, rank := "", 0
	if snap, err := s.state(req.TinkerPath); err == nil {
		base, rank = snap.Base, snap.Rank
	} else if m := s.model(modelOfPath(req.TinkerPath)); m != nil && m.hasCheckpoint(req.TinkerPath) {
		base, rank = m.base, m.rank
	} else {
		writeError(w, errorf(http.StatusNotFound, "weights_info: no checkpoint at %q", clip(req.TinkerPath)))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"base_model": base, "is_lora": true, "lora_rank": rank})
}

func modelOfPath(path string) string {
	rest, _ := strings.CutPrefix(path, "tinker://")
	id, _, _ := strings.Cut(rest, "/")
	return id
}

func (m *model) hasCheckpoint(path string) bool {
	m.st.Lock()
	defer m.st.Unlock()
	return slices.ContainsFunc(m.checkpoints, func(c checkpoint) bool { return c.Path == path })
}

// trainingRun is a model as training_runs lists it (the SDK's TrainingRun).
func (s *Server) trainingRunOf(m *model) map[string]any {
	m.st.Lock()
	cks := slices.Clone(m.checkpoints)
	m.st.Unlock()
	m.mu.Lock()
	last := m.lastRequest
	m.mu.Unlock()
	run := map[string]any{
		"training_run_id": m.id, "base_model": m.base, "model_owner": "sim",
		"is_lora": true, "corrupted": false, "lora_rank": m.rank,
		"last_request_time": last.UTC(),
	}
	for i := len(cks) - 1; i >= 0; i-- {
		key := "last_sampler_checkpoint"
		if cks[i].Type == "training" {
			key = "last_checkpoint"
		}
		if run[key] == nil {
			run[key] = cks[i]
		}
	}
	return run
}

// trainingRuns answers GET training_runs?limit=&offset=: the models, oldest
// first, with the SDK's Cursor.
func (s *Server) trainingRuns(w http.ResponseWriter, r *http.Request) {
	limit, offset := 20, 0
	for _, q := range []struct {
		name string
		dst  *int
	}{{"limit", &limit}, {"offset", &offset}} {
		if v := r.URL.Query().Get(q.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(w, errorf(http.StatusBadRequest, "training_runs: %s %q: want a whole number ≥ 0", q.name, clip(v)))
				return
			}
			*q.dst = n
		}
	}
	s.mu.Lock()
	models := make([]*model, 0, len(s.models))
	for _, m := range s.models {
		models = append(models, m)
	}
	s.mu.Unlock()
	slices.SortFunc(models, func(a, b *model) int { return idNumber(a.id, "model_") - idNumber(b.id, "model_") })
	runs := []map[string]any{}
	for i := offset; i < len(models) && len(runs) < limit; i++ {
		runs = append(runs, s.trainingRunOf(models[i]))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"training_runs": runs,
		"cursor":        map[string]int{"offset": offset, "limit": limit, "total_count": len(models)},
	})
}

// trainingRun answers GET training_runs/ID, training_runs/ID/checkpoints
// and the older models/ID/checkpoints.
func (s *Server) trainingRun(w http.ResponseWriter, route string) {
	parts := strings.Split(route, "/")
	m := (*model)(nil)
	if len(parts) >= 2 {
		m = s.model(parts[1])
	}
	switch {
	case m == nil:
		writeError(w, errorf(http.StatusNotFound, "%s: training run not found", route))
	case len(parts) == 2 && parts[0] == "training_runs":
		writeJSON(w, http.StatusOK, s.trainingRunOf(m))
	case len(parts) == 3 && parts[2] == "checkpoints":
		m.st.Lock()
		cks := append([]checkpoint{}, m.checkpoints...)
		m.st.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"checkpoints": cks,
			"cursor":      map[string]int{"offset": 0, "limit": len(cks), "total_count": len(cks)},
		})
	default:
		writeError(w, errorf(http.StatusNotFound, "no route /api/v1/%s", route))
	}
}
