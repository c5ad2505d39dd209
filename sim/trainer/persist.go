package trainer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stateFile is the name, in CheckpointDir/MODEL/, of a persisted model's
// state (Config.Persist).
const stateFile = "trainer-state.json"

// stateFormat tags a persisted model state.
const stateFormat = "mgrpo-sim-trainer-model/v1"

// modelState is what a persisted model keeps on disk at the end of each
// step: its parameters and optimizer state, where its seq_ids stand, and
// the futures of the requests it still keeps for replays.
type modelState struct {
	Format   string         `json:"format"`
	ID       string         `json:"id"`
	Base     string         `json:"base_model"`
	Rank     int            `json:"lora_rank"`
	Params   []float64      `json:"params"`
	AdamM    []float64      `json:"adam_m"`
	AdamV    []float64      `json:"adam_v"`
	AdamT    int            `json:"adam_t"`
	LastRun  int64          `json:"last_run"`
	Saves    []int64        `json:"saves"`
	Released int64          `json:"released"`
	Requests []requestState `json:"requests"`
}

// requestState is one kept request: enough to answer its replay and its
// retrieve_future as before.
type requestState struct {
	Seq         int64           `json:"seq_id"`
	Route       string          `json:"route"`
	Fingerprint []byte          `json:"fingerprint"`
	FutureID    string          `json:"future_id"`
	Result      json.RawMessage `json:"result"`
}

// persist writes m's state to CheckpointDir/MODEL/trainer-state.json,
// atomically (a temporary file renamed over it), with current, the save
// that just ran and is about to be answered. drain calls it when no
// request of m is running: the parameters are the step's and the
// gradient is empty.
func (s *Server) persist(m *model, current requestState) error {
	st := modelState{Format: stateFormat, ID: m.id, Base: m.base, Rank: m.rank}
	m.st.Lock()
	st.Params = append([]float64(nil), m.params...)
	st.AdamM = append([]float64(nil), m.adam.m...)
	st.AdamV = append([]float64(nil), m.adam.v...)
	st.AdamT = m.adam.t
	m.st.Unlock()
	m.mu.Lock()
	st.LastRun, st.Saves, st.Released = m.lastRun, append([]int64(nil), m.saves...), m.released
	for seq := m.released + 1; seq <= m.lastRun; seq++ {
		e := m.seen[seq]
		if e == nil || e.fut == nil {
			continue
		}
		select {
		case <-e.fut.done:
			st.Requests = append(st.Requests, requestState{Seq: seq, Route: e.route, Fingerprint: []byte(e.fp), FutureID: e.fut.id, Result: e.fut.result})
		default:
		}
	}
	m.mu.Unlock()
	st.Requests = append(st.Requests, current)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("persist model %s: %w", m.id, err)
	}
	dir := filepath.Join(s.cfg.CheckpointDir, m.id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("persist model %s: %w", m.id, err)
	}
	tmp, err := os.CreateTemp(dir, stateFile+".tmp-*")
	if err != nil {
		return fmt.Errorf("persist model %s: %w", m.id, err)
	}
	_, werr := tmp.Write(b)
	if err := tmp.Sync(); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, stateFile))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("persist model %s: %w", m.id, werr)
	}
	return nil
}

// restore loads every model persisted under CheckpointDir, with its kept
// futures, so that a restarted trainer trains its models on and answers
// the replays of their last steps. It runs before the server serves.
func (s *Server) restore() error {
	paths, err := filepath.Glob(filepath.Join(s.cfg.CheckpointDir, "*", stateFile))
	if err != nil {
		return fmt.Errorf("restore the sim trainer's models: %w", err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("restore the sim trainer's models: %w", err)
		}
		var st modelState
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("restore the sim trainer's models: %s: %w", path, err)
		}
		if st.Format != stateFormat {
			return fmt.Errorf("restore the sim trainer's models: %s: format %q, want %q", path, st.Format, stateFormat)
		}
		if n := len(st.Params); len(st.AdamM) != n && st.AdamM != nil || len(st.AdamV) != n && st.AdamV != nil {
			return fmt.Errorf("restore the sim trainer's models: %s: %d parameters but Adam moments of %d and %d", path, n, len(st.AdamM), len(st.AdamV))
		}
		m := newModel(st.ID, st.Base, st.Rank, st.Params)
		m.adam = adamState{m: st.AdamM, v: st.AdamV, t: st.AdamT}
		m.lastRun, m.saves, m.released = st.LastRun, st.Saves, st.Released
		for _, r := range st.Requests {
			f := &future{id: r.FutureID, modelID: st.ID, done: make(chan struct{}), result: r.Result, route: r.Route}
			close(f.done)
			m.seen[r.Seq] = &seqEntry{route: r.Route, fp: string(r.Fingerprint), fut: f}
			s.futures[f.id] = f
			s.nextFuture = max(s.nextFuture, idNumber(f.id, "future_"))
		}
		s.models[st.ID] = m
		s.nModels = max(s.nModels, idNumber(st.ID, "model_"))
	}
	return nil
}

// idNumber is the number of an id made of prefix and a number, 0 for any
// other.
func idNumber(id, prefix string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, prefix))
	if err != nil || !strings.HasPrefix(id, prefix) {
		return 0
	}
	return n
}
