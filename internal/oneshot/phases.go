package oneshot

import (
	"sync"
	"time"
)

// Phases splits a client process's CPU time at its first request and its
// last answer, read from /proc as the servers' hooks fire. Its Hooks go
// into every server the process talks to. Safe for concurrent use.
type Phases struct {
	mu        sync.Mutex
	pid       int
	first     time.Duration // CPU at the first request
	firstSeen bool
	last      time.Duration // CPU at the latest answer
	lastRead  time.Time
	err       error
}

// Watch starts a new measurement of process pid.
func (p *Phases) Watch(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pid, p.first, p.firstSeen, p.last, p.lastRead, p.err = pid, 0, false, 0, time.Time{}, nil
}

// Hooks returns the hooks that feed p.
func (p *Phases) Hooks() Hooks { return Hooks{Request: p.request, Answer: p.answer} }

func (p *Phases) request() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid == 0 || p.firstSeen {
		return
	}
	p.firstSeen = true
	p.first, p.err = ProcCPU(p.pid)
}

// answer reads the CPU at most every 2 ms: the last reading before the
// process's last answer is then at most 2 ms of wall time old.
func (p *Phases) answer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid == 0 || time.Since(p.lastRead) < 2*time.Millisecond {
		return
	}
	p.lastRead = time.Now()
	if cpu, err := ProcCPU(p.pid); err == nil {
		p.last = cpu
	} else if p.err == nil {
		p.err = err
	}
}

// Split returns the CPU before the first request, between it and the last
// answer, and after it, given the process's total; err when /proc could not
// be read.
func (p *Phases) Split(total time.Duration) (start, run, end time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, 0, 0, p.err
	}
	end = total - p.last
	if end < 0 {
		end = 0
	}
	return p.first, p.last - p.first, end, nil
}
