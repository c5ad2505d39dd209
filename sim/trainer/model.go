package trainer

import (
	"net/http"
	"regexp"
	"sync"
	"time"
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
	// saves are the seq_ids of the save_weights_for_sampler requests run;
	// released is the highest seq_id whose future was let go.
	saves    []int64
	released int64
	// lastRequest is when the model's last sequenced request came.
	lastRequest time.Time

	// st guards the training state; the drain goroutine holds it while a
	// request runs.
	st     sync.Mutex
	params []float64
	// grads holds the gradient of every datum since the last optim_step
	// (datums without one left out); gradient sums them.
	grads       [][]float64
	adam        adamState
	records     []groupRecord // this optimizer step's datums with a known reward
	accumulated int           // datums whose gradient waits for optim_step
	checkpoints []checkpoint  // saves, oldest first (training_runs lists them)
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
		params: params,
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
	m.lastRequest = s.cfg.Now()
	if e := m.seen[seq]; e != nil {
		if e.fp != fp {
			// Sent again it would conflict again: told so, the SDK
			// does not retry it.
			e := errorf(http.StatusConflict, "%s: seq_id %d of model %s was already used by another request (%s); a replay must send the same body", route, seq, m.id, e.route)
			e.noRetry = true
			return nil, e
		}
		if e.fut == nil {
			return nil, errorf(http.StatusGone, "%s: seq_id %d of model %s ran, and its result is no longer kept (the futures of the last %d steps are)", route, seq, m.id, s.cfg.KeptSteps)
		}
		return e.fut, nil
	}
	if seq <= m.lastRun {
		e := errorf(http.StatusConflict, "%s: seq_id %d of model %s is before the last one run (%d)", route, seq, m.id, m.lastRun)
		e.noRetry = true
		return nil, e
	}
	e := &seqEntry{route: route, fp: fp, fut: s.newFuture(m.id), run: run}
	expire := s.drawFutureFault()
	s.mu.Lock()
	e.fut.route, e.fut.expire = route, expire
	s.mu.Unlock()
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
		result := encodeResult(res)
		if e.route == "save_weights_for_sampler" {
			s.releaseOldSteps(m, seq)
			if s.cfg.Persist {
				// Before the save is answered: a client that saw the step
				// end can count on a restarted trainer to know it.
				if err := s.persist(m, requestState{Seq: seq, Route: e.route, Fingerprint: []byte(e.fp), FutureID: e.fut.id, Result: result}); err != nil {
					s.cfg.Logger.Error("sim trainer: the model's state could not be kept", "model_id", m.id, "err", err)
					e.fut.fail(categoryServer, err.Error())
					continue
				}
			}
		}
		e.fut.resolveRaw(result)
	}
}

// releaseOldSteps notes that m's save of seq_id seq ran and lets go of the
// futures of the requests before the KeptSteps saves that now end the
// latest steps: their results leave memory, and their seq_ids answer 410.
func (s *Server) releaseOldSteps(m *model, seq int64) {
	m.mu.Lock()
	m.saves = append(m.saves, seq)
	if len(m.saves) <= s.cfg.KeptSteps {
		m.mu.Unlock()
		return
	}
	cutoff := m.saves[len(m.saves)-s.cfg.KeptSteps-1]
	m.saves = m.saves[len(m.saves)-s.cfg.KeptSteps:]
	var ids []string
	for q := m.released + 1; q <= cutoff; q++ {
		if e := m.seen[q]; e != nil && e.fut != nil {
			ids = append(ids, e.fut.id)
			e.fut = nil
		}
	}
	m.released = cutoff
	m.mu.Unlock()
	s.mu.Lock()
	for _, id := range ids {
		delete(s.futures, id)
	}
	s.mu.Unlock()
}

// checkpointChars and maxCheckpointName are what save_weights_for_sampler
// takes as path: SkyRL's ID pattern, ^[A-Za-z0-9_-]{1,255}$. The length is
// checked apart because a counted repetition compiles into 255 copies of
// the class, which cost every mgrpo process ~250 KB and a few milliseconds
// at start-up.
var checkpointChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const maxCheckpointName = 255

// validCheckpointName reports whether s matches SkyRL's ID pattern.
func validCheckpointName(s string) bool {
	return len(s) <= maxCheckpointName && checkpointChars.MatchString(s)
}
