package trainer

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
)

// model is one trained model: its parameters, gradient and optimizer
// state, and the bookkeeping that runs its requests in seq_id order.
type model struct {
	id, base string
	rank     int

	// mu guards the sequencing fields.
	mu      sync.Mutex
	lastRun int64               // the highest seq_id run, in order
	seen    map[int64]*seqEntry // every accepted request, kept for replays
	queue   map[int64]*seqEntry // accepted, not yet run
	running bool                // a drain goroutine is at work

	// st guards the training state; the drain goroutine holds it while a
	// request runs.
	st          sync.Mutex
	params      []float64
	grad        []float64
	adam        adamState
	records     []groupRecord // this optimizer step's datums with a known reward
	accumulated int           // datums whose gradient waits for optim_step
}

// seqEntry is an accepted sequenced request.
type seqEntry struct {
	route string
	fp    string
	fut   *future
	run   func(m *model) (any, *failure)
}

// failure is a request that ran and failed: its future's error.
type failure struct {
	category, msg string
}

func newModel(id, base string, rank int, params []float64) *model {
	return &model{
		id: id, base: base, rank: rank,
		seen: map[int64]*seqEntry{}, queue: map[int64]*seqEntry{},
		params: params, grad: make([]float64, len(params)),
	}
}

// submit accepts a sequenced request: a seq_id seen before with the same
// route and body answers the original future, with another body 409; a
// new one is queued and runs once every earlier seq_id has run.
func (s *Server) submit(m *model, route string, seq int64, fp string, run func(*model) (any, *failure)) (*future, *httpError) {
	if seq < 1 {
		return nil, errorf(http.StatusBadRequest, "%s: seq_id %d: want 1, 2, 3, … per model", route, seq)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.seen[seq]; e != nil {
		if e.fp != fp {
			return nil, errorf(http.StatusConflict, "%s: seq_id %d of model %s was already used by another request (%s); a replay must send the same body", route, seq, m.id, e.route)
		}
		return e.fut, nil
	}
	if seq <= m.lastRun {
		return nil, errorf(http.StatusConflict, "%s: seq_id %d of model %s is before the last one run (%d)", route, seq, m.id, m.lastRun)
	}
	e := &seqEntry{route: route, fp: fp, fut: s.newFuture(m.id), run: run}
	m.seen[seq] = e
	m.queue[seq] = e
	if !m.running && m.queue[m.lastRun+1] != nil {
		m.running = true
		s.wg.Add(1)
		go s.drain(m)
	}
	return e.fut, nil
}

// drain runs m's queued requests in seq_id order until the next one has
// not arrived, or the server closes.
func (s *Server) drain(m *model) {
	defer s.wg.Done()
	for {
		m.mu.Lock()
		seq := m.lastRun + 1
		e := m.queue[seq]
		if e == nil || s.ctx.Err() != nil {
			m.running = false
			m.mu.Unlock()
			return
		}
		delete(m.queue, seq)
		m.mu.Unlock()

		if s.drawFutureFault() {
			// Forget the request: sent again, it runs.
			m.mu.Lock()
			delete(m.seen, seq)
			m.mu.Unlock()
			e.fut.fail(categoryServer, fmt.Sprintf("%s seq_id %d of model %s failed (injected by the simulator); send it again", e.route, seq, m.id))
			continue
		}
		res, fl := e.run(m)
		m.mu.Lock()
		m.lastRun = seq
		e.run = nil // the parsed datums are not needed for replays
		m.mu.Unlock()
		if fl != nil {
			s.cfg.Logger.Warn("sim trainer request failed", "route", e.route, "model_id", m.id, "seq_id", seq, "err", fl.msg)
			e.fut.fail(fl.category, fl.msg)
			continue
		}
		e.fut.resolve(res)
	}
}

// checkpointName is what save_weights_for_sampler takes as path: SkyRL's
// ID pattern.
var checkpointName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)
