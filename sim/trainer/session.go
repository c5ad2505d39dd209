package trainer

import (
	"net/http"
	"slices"
	"strconv"
	"time"
)

// session is a client's session: it lives SessionTTL past its last
// heartbeat. Models outlive their session (a restarted client trains its
// model on from a new one).
type session struct {
	lastBeat time.Time
}

// createEntry is a create_model request, kept so that a replay (the same
// session, model_seq_id and body) answers the same model.
type createEntry struct {
	fp  string
	fut *future
}

func (s *Server) createSession(w http.ResponseWriter, body []byte) {
	var req createSessionRequest
	if len(body) > 0 {
		if e := decode("create_session", body, &req); e != nil {
			writeError(w, e)
			return
		}
	}
	s.mu.Lock()
	s.nSessions++
	id := "session_" + strconv.Itoa(s.nSessions)
	s.sessions[id] = &session{lastBeat: s.cfg.Now()}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"type": "create_session", "session_id": id})
}

// liveSession reports whether session id exists and has not expired; an
// expired one is forgotten. s.mu must be held.
func (s *Server) liveSession(id string) bool {
	ss := s.sessions[id]
	if ss == nil {
		return false
	}
	if s.cfg.Now().Sub(ss.lastBeat) > s.cfg.SessionTTL {
		delete(s.sessions, id)
		return false
	}
	return true
}

func (s *Server) heartbeat(w http.ResponseWriter, body []byte) {
	var req heartbeatRequest
	if e := decode("session_heartbeat", body, &req); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	live := s.liveSession(req.SessionID)
	if live {
		s.sessions[req.SessionID].lastBeat = s.cfg.Now()
	}
	s.mu.Unlock()
	if !live {
		writeError(w, errorf(http.StatusNotFound, "session_heartbeat: session %q not found or expired", req.SessionID))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"type": "session_heartbeat"})
}

func (s *Server) createModel(w http.ResponseWriter, body []byte) {
	var req createModelRequest
	if e := decode("create_model", body, &req); e != nil {
		writeError(w, e)
		return
	}
	rank := 0
	if req.LoraConfig != nil {
		rank = req.LoraConfig.Rank
	}
	switch {
	case req.BaseModel == "":
		writeError(w, errorf(http.StatusBadRequest, "create_model: missing base_model"))
		return
	case len(s.cfg.BaseModels) > 0 && !slices.Contains(s.cfg.BaseModels, req.BaseModel):
		writeError(w, errorf(http.StatusBadRequest, "create_model: base_model %q is not served (served: %v)", req.BaseModel, s.cfg.BaseModels))
		return
	case rank < 0:
		writeError(w, errorf(http.StatusBadRequest, "create_model: lora_config.rank %d: want ≥ 0", rank))
		return
	}
	fp := fingerprint("create_model", body)
	key := ""
	if req.ModelSeqID != nil {
		key = req.SessionID + "\x00" + strconv.FormatInt(*req.ModelSeqID, 10)
	}
	s.mu.Lock()
	if !s.liveSession(req.SessionID) {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, "create_model: session %q not found or expired", req.SessionID))
		return
	}
	if e := s.creates[key]; key != "" && e != nil {
		s.mu.Unlock()
		if e.fp != fp {
			writeError(w, errorf(http.StatusConflict, "create_model: model_seq_id %d of session %s was already used by another request", *req.ModelSeqID, req.SessionID))
			return
		}
		writeJSON(w, http.StatusOK, futureAnswer{RequestID: e.fut.id, ModelID: e.fut.modelID})
		return
	}
	s.mu.Unlock()

	params, err := s.cfg.Policy.Initial(req.BaseModel)
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "create_model: base_model %q: %v", req.BaseModel, err))
		return
	}
	s.mu.Lock()
	if e := s.creates[key]; key != "" && e != nil {
		// A concurrent replay got there first.
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, futureAnswer{RequestID: e.fut.id, ModelID: e.fut.modelID})
		return
	}
	s.nModels++
	id := "model_" + strconv.Itoa(s.nModels)
	s.mu.Unlock()
	f := s.newFuture(id)
	if s.drawFutureFault() {
		// Its first retrieve answers 410; the SDK sends create_model again
		// (the same session and model_seq_id) and is answered this model.
		s.mu.Lock()
		f.expire = true
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.models[id] = newModel(id, req.BaseModel, rank, params)
	if key != "" {
		s.creates[key] = &createEntry{fp: fp, fut: f}
	}
	s.mu.Unlock()
	f.resolve(map[string]string{"model_id": id, "type": "create_model"})
	writeJSON(w, http.StatusOK, futureAnswer{RequestID: f.id, ModelID: id})
}

func (s *Server) getInfo(w http.ResponseWriter, body []byte) {
	var req modelRequest
	if e := decode("get_info", body, &req); e != nil {
		writeError(w, e)
		return
	}
	m := s.model(req.ModelID)
	if m == nil {
		writeError(w, errorf(http.StatusNotFound, "get_info: model %q not found", req.ModelID))
		return
	}
	data := map[string]string{"arch": "sim", "model_name": m.base, "base_model": m.base}
	if tn, ok := s.cfg.Policy.(TokenizerNamer); ok {
		data["tokenizer_id"] = tn.TokenizerID()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"type":       "get_info",
		"model_id":   m.id,
		"model_name": m.base,
		"model_data": data,
		"is_lora":    true,
		"lora_rank":  m.rank,
	})
}
