package trainer

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The sampling routes, as the Tinker SDK's SamplingClient calls them:
// create_sampling_session {session_id, sampling_session_seq_id,
// base_model?, model_path?} fixes the weights a sampling session draws
// from, and asample {sampling_session_id, seq_id, num_samples, prompt,
// sampling_params, prompt_logprobs} answers a future {request_id,
// sample_sequence_ids} whose result is a SampleResponse (JSON, or protobuf
// to a poll that accepts it). sample is asample answered at once, and
// asample without a sampling session names its weights itself (model_path
// or base_model), as older SDKs send it.

// samplerWeights is what a save_weights_for_sampler kept: the parameters
// a sampling session of its path draws from.
type samplerWeights struct {
	base   string
	params []float64
}

// samplingSession is one sampling client's session: the weights it was
// created on, frozen, and its requests by seq_id for replays.
type samplingSession struct {
	id     string
	base   string
	path   string
	params []float64
	// seen, guarded by Server.mu, maps a seq_id to its request; an entry's
	// future is nil once let go (Config.KeptSamples).
	seen map[int64]*sampleEntry
}

// sampleEntry is an accepted asample request.
type sampleEntry struct {
	fp  string
	fut *future
	ids []string // sample_sequence_ids
}

// keptSample is a sampling future in the order made, for letting the
// oldest go.
type keptSample struct {
	fut *future
	ss  *samplingSession // nil for a request without a sampling session
	seq int64
}

type createSamplingSessionRequest struct {
	SessionID            string `json:"session_id"`
	SamplingSessionSeqID *int64 `json:"sampling_session_seq_id"`
	BaseModel            string `json:"base_model"`
	ModelPath            string `json:"model_path"`
}

// samplingParams is the SDK's SamplingParams.
type samplingParams struct {
	MaxTokens   *int            `json:"max_tokens"`
	Seed        *int64          `json:"seed"`
	Stop        json.RawMessage `json:"stop"`
	Temperature *float64        `json:"temperature"`
	TopK        *int            `json:"top_k"`
	TopP        *float64        `json:"top_p"`
}

// sampleRequest is the SDK's SampleRequest. The fields of newer releases
// the sim does not serve (top-k logprobs, target prompt logprobs,
// alternative prompt tokens) are read so that asking for them fails
// clearly instead of being answered without them.
type sampleRequest struct {
	NumSamples *int `json:"num_samples"`
	Prompt     *struct {
		Chunks []chunk `json:"chunks"`
	} `json:"prompt"`
	SamplingParams       *samplingParams `json:"sampling_params"`
	BaseModel            string          `json:"base_model"`
	ModelPath            string          `json:"model_path"`
	SamplingSessionID    string          `json:"sampling_session_id"`
	SeqID                *int64          `json:"seq_id"`
	PromptLogprobs       *bool           `json:"prompt_logprobs"`
	TopkPromptLogprobs   int             `json:"topk_prompt_logprobs"`
	TopkSampleLogprobs   int             `json:"topk_sample_logprobs"`
	TargetPromptLogprobs json.RawMessage `json:"target_prompt_logprobs"`
	PromptAltTokensK     int             `json:"prompt_alt_tokens_k"`
}

// sampledSequence and sampleResponse are the SDK's SampledSequence and
// SampleResponse in JSON.
type sampledSequence struct {
	StopReason string    `json:"stop_reason"`
	Tokens     []int     `json:"tokens"`
	Logprobs   []float64 `json:"logprobs"`
}

type sampleResponse struct {
	Type           string            `json:"type"`
	Sequences      []sampledSequence `json:"sequences"`
	PromptLogprobs []*float64        `json:"prompt_logprobs,omitempty"`
}

// samplePlan is a checked sample request: what to draw, and how.
type samplePlan struct {
	prompt      []int
	n           int
	maxTokens   int // 0: no cap
	temperature float64
	seed        *int64
	stopText    []string
	stopIDs     []int
	promptLPs   bool
}

// sampler returns the policy's Sampler, or why there is none.
func (s *Server) sampler() (Sampler, string) {
	sp, ok := s.cfg.Policy.(Sampler)
	if !ok {
		return nil, fmt.Sprintf("the sim trainer's policy (%T) does not sample", s.cfg.Policy)
	}
	return sp, ""
}

// weightsAt returns the parameters a sampling request names: the sampler
// weights (or the training state) saved at a tinker:// path, or a served
// base model's initial parameters.
func (s *Server) weightsAt(route, path, base string) ([]float64, string, *httpError) {
	if path == "" {
		switch {
		case base == "":
			return nil, "", errorf(http.StatusBadRequest, "%s: want model_path (a tinker:// path save_weights_for_sampler answered) or base_model", route)
		case len(s.cfg.BaseModels) > 0 && !slices.Contains(s.cfg.BaseModels, base):
			return nil, "", errorf(http.StatusBadRequest, "%s: base_model %q is not served (served: %v)", route, clip(base), s.cfg.BaseModels)
		}
		params, err := s.cfg.Policy.Initial(base)
		if err != nil {
			return nil, "", errorf(http.StatusBadRequest, "%s: base_model %q: %v", route, clip(base), err)
		}
		return params, base, nil
	}
	rest, ok := strings.CutPrefix(path, "tinker://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || !validCheckpointName(parts[0]) || !validCheckpointName(parts[2]) {
		return nil, "", errorf(http.StatusBadRequest, "%s: model_path %q: want tinker://MODEL/sampler_weights/NAME, as save_weights_for_sampler answers", route, clip(path))
	}
	switch parts[1] {
	case "sampler_weights":
		s.mu.Lock()
		w, ok := s.samplers[path]
		s.mu.Unlock()
		if ok {
			return slices.Clone(w.params), w.base, nil
		}
		// Saved in an earlier server's life: read back from its file.
		sp, _ := s.cfg.Policy.(Sampler)
		if sp != nil && s.cfg.CheckpointDir != "" {
			file := filepath.Join(s.cfg.CheckpointDir, parts[0], parts[2]+".json")
			if _, err := os.Stat(file); err == nil {
				params, err := sp.Load(file)
				if err != nil {
					return nil, "", errorf(http.StatusInternalServerError, "%s: model_path %s: %v", route, path, err)
				}
				if m := s.model(parts[0]); m != nil {
					base = m.base
				}
				return params, base, nil
			}
		}
	case "weights":
		if snap, err := s.state(path); err == nil {
			return slices.Clone(snap.Params), snap.Base, nil
		}
	default:
		return nil, "", errorf(http.StatusBadRequest, "%s: model_path %q: want tinker://MODEL/sampler_weights/NAME, as save_weights_for_sampler answers", route, clip(path))
	}
	return nil, "", errorf(http.StatusNotFound, "%s: no weights saved at %s", route, clip(path))
}

// createSamplingSession answers the SDK's create_sampling_session: a
// session whose weights are fixed now. A replay of a session's
// sampling_session_seq_id with the same body answers the same sampling
// session.
func (s *Server) createSamplingSession(w http.ResponseWriter, body []byte) {
	const route = "create_sampling_session"
	var req createSamplingSessionRequest
	if e := decode(route, body, &req); e != nil {
		writeError(w, e)
		return
	}
	if _, why := s.sampler(); why != "" {
		writeError(w, errorf(http.StatusBadRequest, "%s: %s", route, why))
		return
	}
	fp := fingerprint(route, body)
	key := ""
	if req.SamplingSessionSeqID != nil {
		key = req.SessionID + "\x00" + strconv.FormatInt(*req.SamplingSessionSeqID, 10)
	}
	s.mu.Lock()
	if !s.liveSession(req.SessionID) {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, "%s: session %q not found or expired", route, clip(req.SessionID)))
		return
	}
	if e := s.samplingCreates[key]; key != "" && e != nil {
		s.mu.Unlock()
		if e.fp != fp {
			writeError(w, errorf(http.StatusConflict, "%s: sampling_session_seq_id %d of session %s was already used by another request", route, *req.SamplingSessionSeqID, req.SessionID))
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"type": route, "sampling_session_id": e.id})
		return
	}
	s.mu.Unlock()
	params, base, e := s.weightsAt(route, req.ModelPath, req.BaseModel)
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.samplingCreates[key]; key != "" && e != nil {
		// A concurrent replay got there first.
		writeJSON(w, http.StatusOK, map[string]string{"type": route, "sampling_session_id": e.id})
		return
	}
	s.nSampling++
	ss := &samplingSession{id: "sampling_" + strconv.Itoa(s.nSampling), base: base, path: req.ModelPath,
		params: params, seen: map[int64]*sampleEntry{}}
	s.samplingSessions[ss.id] = ss
	if key != "" {
		s.samplingCreates[key] = &samplingCreate{fp: fp, id: ss.id}
	}
	writeJSON(w, http.StatusOK, map[string]string{"type": route, "sampling_session_id": ss.id})
}

// samplingCreate is a create_sampling_session request, kept for replays.
type samplingCreate struct {
	fp, id string
}

// asample answers the SDK's asample (a future of the samples) and, with
// immediate true, sample (the samples themselves). Within a sampling
// session a seq_id seen before with the same body answers the same
// future (the SDK resends a request whose answer it lost); another body
// is 409. A request that can be read but is wrong (a bad prompt or
// parameter, a feature the sim does not serve) answers a future that
// fails with category "user".
func (s *Server) asample(w http.ResponseWriter, route string, body []byte, immediate bool) {
	var req sampleRequest
	if e := decode(route, body, &req); e != nil {
		writeError(w, e)
		return
	}
	var (
		ss     *samplingSession
		params []float64
	)
	if req.SamplingSessionID != "" {
		s.mu.Lock()
		ss = s.samplingSessions[req.SamplingSessionID]
		s.mu.Unlock()
		switch {
		case ss == nil:
			writeError(w, errorf(http.StatusNotFound, "%s: sampling session %q not found", route, clip(req.SamplingSessionID)))
			return
		case req.SeqID == nil && !immediate:
			writeError(w, errorf(http.StatusBadRequest, "%s: missing seq_id (required with sampling_session_id)", route))
			return
		}
		params = ss.params
	} else {
		var e *httpError
		if params, _, e = s.weightsAt(route, req.ModelPath, req.BaseModel); e != nil {
			writeError(w, e)
			return
		}
	}
	n := 1
	if req.NumSamples != nil {
		n = *req.NumSamples
	}
	fp := fingerprint(route, body)
	if ss != nil && req.SeqID != nil && !immediate {
		s.mu.Lock()
		if e := ss.seen[*req.SeqID]; e != nil {
			s.mu.Unlock()
			switch {
			case e.fp != fp:
				he := errorf(http.StatusConflict, "%s: seq_id %d of sampling session %s was already used by another request; a replay must send the same body", route, *req.SeqID, ss.id)
				he.noRetry = true
				writeError(w, he)
			case e.fut == nil:
				writeError(w, errorf(http.StatusGone, "%s: seq_id %d of sampling session %s ran, and its result is no longer kept (the last %d samples' are)", route, *req.SeqID, ss.id, s.cfg.KeptSamples))
			default:
				writeJSON(w, http.StatusOK, sampleAnswer{RequestID: e.fut.id, ModelID: ss.id, SampleSequenceIDs: e.ids})
			}
			return
		}
		s.mu.Unlock()
	}

	res, fl := s.drawSamples(&req, n, params, s.sampleKey(ss, req.SeqID))
	if immediate {
		if fl != nil {
			writeError(w, errorf(http.StatusBadRequest, "%s: %s", route, fl.msg))
			return
		}
		writeJSON(w, http.StatusOK, res)
		return
	}
	owner := ""
	if ss != nil {
		owner = ss.id
	}
	f := s.newFuture(owner)
	ids := make([]string, max(n, 0))
	for i := range ids {
		ids[i] = f.id + ":" + strconv.Itoa(i)
	}
	expire := s.drawFutureFault()
	s.mu.Lock()
	f.route, f.expire = "asample", expire
	seq := int64(0)
	if ss != nil && req.SeqID != nil {
		seq = *req.SeqID
		if e := ss.seen[seq]; e != nil && e.fut != nil && e.fp == fp {
			// A concurrent replay got there first.
			delete(s.futures, f.id)
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, sampleAnswer{RequestID: e.fut.id, ModelID: ss.id, SampleSequenceIDs: e.ids})
			return
		}
		ss.seen[seq] = &sampleEntry{fp: fp, fut: f, ids: ids}
	}
	s.keptSamples = append(s.keptSamples, keptSample{fut: f, ss: ss, seq: seq})
	s.releaseOldSamples()
	s.mu.Unlock()
	if fl != nil {
		s.cfg.Logger.Warn("sim trainer request failed", "route", route, "sampling_session_id", owner, "err", fl.msg)
		f.fail(fl.category, fl.msg)
	} else {
		f.resolve(res)
	}
	writeJSON(w, http.StatusOK, sampleAnswer{RequestID: f.id, ModelID: owner, SampleSequenceIDs: ids})
}

// sampleAnswer is asample's answer: the SDK's UntypedAPIFuture with one
// sequence id per sample (SDKs since 0.25 require them).
type sampleAnswer struct {
	RequestID         string   `json:"request_id"`
	ModelID           string   `json:"model_id,omitempty"`
	SampleSequenceIDs []string `json:"sample_sequence_ids"`
}

// releaseOldSamples lets go of the oldest sampling futures beyond
// Config.KeptSamples: a retrieve of one, or a replay of its seq_id, is
// then 410. s.mu must be held.
func (s *Server) releaseOldSamples() {
	for len(s.keptSamples) > s.cfg.KeptSamples {
		k := s.keptSamples[0]
		s.keptSamples = s.keptSamples[1:]
		delete(s.futures, k.fut.id)
		if k.ss != nil {
			if e := k.ss.seen[k.seq]; e != nil && e.fut == k.fut {
				e.fut = nil
			}
		}
	}
}

// sampleKey is the random stream of a request without a seed: its
// sampling session and seq_id (so a replay draws the same), or, for a
// request outside a session, the server's count of such requests.
func (s *Server) sampleKey(ss *samplingSession, seq *int64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00", s.cfg.Seed)
	if ss != nil && seq != nil {
		fmt.Fprintf(h, "%s\x00%d", ss.id, *seq)
	} else {
		s.mu.Lock()
		s.nUnsessioned++
		fmt.Fprintf(h, "\x00%d", s.nUnsessioned)
		s.mu.Unlock()
	}
	return h.Sum64()
}

// planSample checks a sample request.
func planSample(req *sampleRequest, n int) (samplePlan, error) {
	p := samplePlan{n: n, temperature: 1}
	switch {
	case n < 1:
		return p, fmt.Errorf("num_samples %d: want ≥ 1", n)
	case req.Prompt == nil:
		return p, fmt.Errorf("missing prompt")
	case req.SamplingParams == nil:
		return p, fmt.Errorf("missing sampling_params")
	case req.TopkPromptLogprobs > 0 || req.TopkSampleLogprobs > 0:
		return p, fmt.Errorf("top-k logprobs are not served by the sim trainer")
	case len(req.TargetPromptLogprobs) > 0 && string(req.TargetPromptLogprobs) != "null":
		return p, fmt.Errorf("target_prompt_logprobs is not served by the sim trainer")
	case req.PromptAltTokensK > 0:
		return p, fmt.Errorf("prompt_alt_tokens_k is not served by the sim trainer")
	}
	for c, ch := range req.Prompt.Chunks {
		if ch.Type != "" && ch.Type != "encoded_text" {
			return p, fmt.Errorf("prompt.chunks[%d].type %q: only encoded_text is served", c, ch.Type)
		}
		for k, t := range ch.Tokens {
			if t < 0 || t > math.MaxInt32 {
				return p, fmt.Errorf("prompt.chunks[%d].tokens[%d] = %d: not a token id", c, k, t)
			}
			p.prompt = append(p.prompt, int(t))
		}
	}
	if len(p.prompt) == 0 {
		return p, fmt.Errorf("prompt: no tokens")
	}
	sp := req.SamplingParams
	if sp.MaxTokens != nil {
		if *sp.MaxTokens < 1 {
			return p, fmt.Errorf("sampling_params.max_tokens %d: want ≥ 1", *sp.MaxTokens)
		}
		p.maxTokens = *sp.MaxTokens
	}
	if sp.Temperature != nil {
		if *sp.Temperature < 0 || math.IsNaN(*sp.Temperature) {
			return p, fmt.Errorf("sampling_params.temperature %v: want ≥ 0", *sp.Temperature)
		}
		p.temperature = *sp.Temperature
	}
	if sp.TopK != nil && *sp.TopK != -1 && *sp.TopK < 1 {
		return p, fmt.Errorf("sampling_params.top_k %d: want -1 (no limit) or ≥ 1", *sp.TopK)
	}
	if sp.TopP != nil && (*sp.TopP <= 0 || *sp.TopP > 1) {
		return p, fmt.Errorf("sampling_params.top_p %v: want 0 < top_p ≤ 1", *sp.TopP)
	}
	p.seed = sp.Seed
	if len(sp.Stop) > 0 && string(sp.Stop) != "null" {
		var one string
		if json.Unmarshal(sp.Stop, &one) == nil {
			p.stopText = []string{one}
		} else if json.Unmarshal(sp.Stop, &p.stopText) != nil {
			p.stopText = nil
			if json.Unmarshal(sp.Stop, &p.stopIDs) != nil {
				return p, fmt.Errorf("sampling_params.stop: want a string, a list of strings or a list of token ids")
			}
		}
	}
	p.promptLPs = req.PromptLogprobs != nil && *req.PromptLogprobs
	return p, nil
}

// drawSamples draws a request's samples from params. Each sample has its
// own random stream: from the request's seed and the sample's index when
// it has a seed, else from key and the index; at temperature 0 every
// sample is the greedy one.
func (s *Server) drawSamples(req *sampleRequest, n int, params []float64, key uint64) (*sampleResponse, *failure) {
	pol, why := s.sampler()
	if why != "" {
		return nil, &failure{categoryUser, why}
	}
	p, err := planSample(req, n)
	if err != nil {
		return nil, &failure{categoryUser, err.Error()}
	}
	out := &sampleResponse{Type: "sample", Sequences: make([]sampledSequence, 0, p.n)}
	for i := range p.n {
		var rng *rand.Rand
		if p.temperature > 0 {
			a, b := key, uint64(i)
			if p.seed != nil {
				a = uint64(*p.seed) ^ 0x5eed5eed5eed5eed
			}
			rng = rand.New(rand.NewPCG(a, b*0x9e3779b97f4a7c15+1))
		}
		tokens, lps, eos, err := pol.Sample(params, p.prompt, p.maxTokens, p.temperature, rng)
		if err != nil {
			return nil, &failure{categoryUser, err.Error()}
		}
		seq, err := cutSample(pol, p, tokens, lps, eos)
		if err != nil {
			return nil, &failure{categoryServer, err.Error()}
		}
		out.Sequences = append(out.Sequences, seq)
	}
	if p.promptLPs {
		lps, err := pol.PromptLogprobs(params, p.prompt)
		if err != nil {
			return nil, &failure{categoryUser, "prompt_logprobs: " + err.Error()}
		}
		out.PromptLogprobs = make([]*float64, len(p.prompt))
		for i := 1; i < len(lps) && i < len(p.prompt); i++ {
			v := lps[i]
			out.PromptLogprobs[i] = &v
		}
	}
	return out, nil
}

// cutSample ends a drawn completion at the first stop token (included),
// the shortest prefix whose text holds a stop string, or max_tokens
// (stop_reason "length"); a completion the model ended itself stops
// ("stop").
func cutSample(pol Sampler, p samplePlan, tokens []int, lps []float64, eos bool) (sampledSequence, error) {
	end, reason := len(tokens), "length"
	if eos {
		reason = "stop"
	}
	for i, t := range tokens {
		if slices.Contains(p.stopIDs, t) {
			end, reason = i+1, "stop"
			break
		}
	}
	if len(p.stopText) > 0 {
		holds := func(k int) (bool, error) {
			text, err := pol.Decode(tokens[:k])
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(p.stopText, func(st string) bool { return st != "" && strings.Contains(text, st) }), nil
		}
		full, err := holds(end)
		if err != nil {
			return sampledSequence{}, err
		}
		if full {
			lo, hi := 1, end
			for lo < hi {
				mid := (lo + hi) / 2
				ok, err := holds(mid)
				if err != nil {
					return sampledSequence{}, err
				}
				if ok {
					hi = mid
				} else {
					lo = mid + 1
				}
			}
			end, reason = lo, "stop"
		}
	}
	if p.maxTokens > 0 && end > p.maxTokens {
		end, reason = p.maxTokens, "length"
	}
	return sampledSequence{StopReason: reason, Tokens: slices.Clone(tokens[:end]), Logprobs: slices.Clone(lps[:end])}, nil
}
