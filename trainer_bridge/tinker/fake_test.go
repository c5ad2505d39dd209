package tinker_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeTinker is a Tinker-shaped server for the wire tests. It shares no
// code with the client: it decodes every body into generic JSON. It
// answers futures, dedupes (model, seq_id) like SkyRL (same body: the
// original future; another body: 409), and runs each model's requests
// only once, counting what it ran so tests can tell a replay from a
// second training. Scripts inject answers: submit[route] holds statuses
// answered before a route is served; polls holds retrieve_future answers
// given before a future's result.
type fakeTinker struct {
	key    string
	models []string // get_server_capabilities

	mu         sync.Mutex
	calls      []fakeCall
	problems   []string
	sessions   map[string]int // heartbeats per session
	nSessions  int
	nModels    int
	modelsByID map[string]*fakeModel
	futures    map[string]json.RawMessage
	nextReq    int
	submit     map[string][]int
	polls      []string
	pollsFor   map[string][]string // by request_id, before polls
	// echoKey makes error answers repeat the key, to check the client
	// keeps it out of its errors.
	echoKey bool
	// submitDetail replaces the detail of scripted submit answers.
	submitDetail string
}

type fakeCall struct {
	route string
	body  map[string]any
	raw   []byte
	key   string
}

type fakeModel struct {
	base    string
	lastSeq int64
	bodies  map[int64]string
	reqs    map[int64]string
	// What ran: datums through forward_backward, optimizer steps, saves.
	datums, optims, saves int
}

func newFake(key string, models ...string) (*fakeTinker, *httptest.Server) {
	f := &fakeTinker{
		key:        key,
		models:     models,
		sessions:   map[string]int{},
		modelsByID: map[string]*fakeModel{},
		futures:    map[string]json.RawMessage{},
		submit:     map[string][]int{},
		pollsFor:   map[string][]string{},
	}
	return f, httptest.NewServer(f)
}

func (f *fakeTinker) problem(format string, args ...any) {
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

func (f *fakeTinker) reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeTinker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	route, ok := strings.CutPrefix(r.URL.Path, "/api/v1/")
	f.mu.Lock()
	defer f.mu.Unlock()
	if !ok {
		f.problem("path %s outside /api/v1", r.URL.Path)
		f.reply(w, 404, map[string]string{"detail": "Not Found"})
		return
	}
	call := fakeCall{route: route, raw: raw, key: r.Header.Get("X-API-Key")}
	if len(raw) > 0 {
		if r.Header.Get("Content-Type") != "application/json" {
			f.problem("%s: Content-Type %q", route, r.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal(raw, &call.body); err != nil {
			f.problem("%s: body is not a JSON object: %v", route, err)
		}
	}
	f.calls = append(f.calls, call)
	if call.key != f.key {
		detail := "invalid API key"
		if f.echoKey {
			detail += " " + call.key
		}
		f.reply(w, 401, map[string]string{"detail": detail})
		return
	}
	if s := f.submit[route]; len(s) > 0 {
		f.submit[route] = s[1:]
		switch st := s[0]; st {
		case 400:
			w.WriteHeader(400) // a bare 400, as a load balancer's
		case 429:
			w.Header().Set("Retry-After", "0")
			f.reply(w, 429, map[string]string{"detail": "rate limited"})
		default:
			d := "scripted " + strconv.Itoa(st)
			if f.submitDetail != "" {
				d = f.submitDetail
			}
			f.reply(w, st, map[string]string{"detail": d})
		}
		return
	}
	switch route {
	case "client/config":
		// The fake is a server that predates client/config, as SkyRL's.
		f.reply(w, 404, map[string]string{"detail": "Not Found"})
	case "get_server_capabilities":
		if r.Method != http.MethodGet {
			f.problem("get_server_capabilities with %s", r.Method)
		}
		var ms []map[string]string
		for _, m := range f.models {
			ms = append(ms, map[string]string{"model_name": m})
		}
		f.reply(w, 200, map[string]any{"supported_models": ms, "supported_loss_fns": []string{"importance_sampling", "ppo"}})
	case "create_session":
		f.nSessions++
		id := fmt.Sprintf("session_%d", f.nSessions)
		f.sessions[id] = 0
		f.reply(w, 200, map[string]any{"type": "create_session", "session_id": id})
	case "session_heartbeat":
		id, _ := call.body["session_id"].(string)
		if _, ok := f.sessions[id]; !ok {
			f.reply(w, 404, map[string]string{"detail": "Session not found"})
			return
		}
		f.sessions[id]++
		f.reply(w, 200, map[string]string{"type": "session_heartbeat"})
	case "create_model":
		f.nModels++
		id := fmt.Sprintf("model_%d", f.nModels)
		base, _ := call.body["base_model"].(string)
		f.modelsByID[id] = &fakeModel{base: base, bodies: map[int64]string{}, reqs: map[int64]string{}}
		req := f.newFuture(map[string]any{"model_id": id, "type": "create_model"})
		f.reply(w, 200, map[string]any{"request_id": req, "model_id": id})
	case "get_info":
		id, _ := call.body["model_id"].(string)
		m := f.modelsByID[id]
		if m == nil {
			f.reply(w, 404, map[string]string{"detail": "Model not found"})
			return
		}
		f.reply(w, 200, map[string]any{"model_id": id, "status": "ready", "model_data": map[string]any{"base_model": m.base, "model_name": m.base}})
	case "forward_backward", "optim_step", "save_weights_for_sampler":
		f.sequenced(w, route, call)
	case "retrieve_future":
		f.retrieve(w, call)
	default:
		f.problem("unknown route %s", route)
		f.reply(w, 404, map[string]string{"detail": "Not Found"})
	}
}

func (f *fakeTinker) newFuture(result any) string {
	f.nextReq++
	id := strconv.Itoa(f.nextReq)
	b, _ := json.Marshal(result)
	f.futures[id] = b
	return id
}

// sequenced serves a model's ordered requests.
func (f *fakeTinker) sequenced(w http.ResponseWriter, route string, c fakeCall) {
	id, _ := c.body["model_id"].(string)
	m := f.modelsByID[id]
	if m == nil {
		f.reply(w, 404, map[string]string{"detail": "Model not found"})
		return
	}
	seqF, ok := c.body["seq_id"].(float64)
	if !ok {
		f.problem("%s without seq_id", route)
		f.reply(w, 422, map[string]string{"detail": "seq_id required"})
		return
	}
	seq := int64(seqF)
	canon, _ := json.Marshal(c.body) // map keys sorted: a canonical form
	if old, seen := m.bodies[seq]; seen {
		if old != route+string(canon) {
			f.reply(w, 409, map[string]string{"detail": "Training request sequence number was reused"})
			return
		}
		f.reply(w, 200, map[string]any{"request_id": m.reqs[seq], "model_id": id})
		return
	}
	if seq != m.lastSeq+1 {
		f.problem("%s: seq_id %d after %d", route, seq, m.lastSeq)
	}
	m.lastSeq = seq
	m.bodies[seq] = route + string(canon)
	var result any
	switch route {
	case "forward_backward":
		in, _ := c.body["forward_backward_input"].(map[string]any)
		data, _ := in["data"].([]any)
		m.datums += len(data)
		outs := make([]map[string]any, len(data))
		for i := range outs {
			outs[i] = map[string]any{}
		}
		result = map[string]any{
			"loss_fn_output_type": "ArrayRecord",
			"loss_fn_outputs":     outs,
			"metrics":             map[string]float64{"loss:sum": float64(len(data)), "clip_fraction:mean": float64(len(data)) / 1000, "entropy:max": seqF},
		}
	case "optim_step":
		m.optims++
		result = map[string]any{"metrics": map[string]float64{"grad_norm:mean": 1.5}}
	case "save_weights_for_sampler":
		m.saves++
		path, _ := c.body["path"].(string)
		result = map[string]any{"path": "tinker://" + id + "/sampler_weights/" + path, "type": "save_weights_for_sampler"}
	}
	req := f.newFuture(result)
	m.reqs[seq] = req
	f.reply(w, 200, map[string]any{"request_id": req, "model_id": id})
}

func (f *fakeTinker) retrieve(w http.ResponseWriter, c fakeCall) {
	id, _ := c.body["request_id"].(string)
	if len(c.body) != 1 {
		f.problem("retrieve_future body %s", c.raw)
	}
	result, ok := f.futures[id]
	if !ok {
		f.reply(w, 404, map[string]string{"detail": "Future not found"})
		return
	}
	var p string
	if q := f.pollsFor[id]; len(q) > 0 {
		p, f.pollsFor[id] = q[0], q[1:]
	} else if len(f.polls) > 0 {
		p, f.polls = f.polls[0], f.polls[1:]
	}
	if p != "" {
		switch p {
		case "try_again":
			f.reply(w, 200, map[string]any{"type": "try_again", "request_id": id, "queue_state": "active"})
		case "408":
			f.reply(w, 408, map[string]string{"detail": "Timeout waiting for result"})
		case "410":
			f.reply(w, 410, map[string]string{"detail": "Promise expired"})
		case "503":
			f.reply(w, 503, map[string]string{"detail": "overloaded"})
		case "error200":
			msg := "target token 99 out of vocabulary"
			if f.echoKey {
				msg += " for key " + f.key
			}
			f.reply(w, 200, map[string]any{"error": msg, "category": "user"})
		case "detail400":
			f.reply(w, 400, map[string]any{"detail": "Datum 3 has mismatched lengths"})
		default:
			f.problem("unknown poll script %q", p)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(result)
}

// callsTo returns the calls to route so far.
func (f *fakeTinker) callsTo(route string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.route == route {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeTinker) model(id string) fakeModel {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.modelsByID[id]; m != nil {
		return *m
	}
	return fakeModel{}
}

func (f *fakeTinker) heartbeats(session string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[session]
}

// check fails the test for every problem the server saw.
func (f *fakeTinker) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.problems {
		t.Errorf("fake Tinker server: %s", p)
	}
}

func (f *fakeTinker) script(route string, statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submit[route] = append(f.submit[route], statuses...)
}

func (f *fakeTinker) scriptPolls(answers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls = append(f.polls, answers...)
}

func (f *fakeTinker) scriptPollsFor(requestID string, answers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pollsFor[requestID] = append(f.pollsFor[requestID], answers...)
}
