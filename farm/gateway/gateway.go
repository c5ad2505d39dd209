package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/farm"
	"github.com/mgrpo/mgrpo/internal/httpserve"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/rollout"
)

// Roles of the gateway's base URLs.
const (
	RolePlanner  = "planner"
	RoleExecutor = "executor"
	// RoleAgent is the one role of mode single.
	RoleAgent = "agent"
)

// TrajectoryHeader names the trajectory a call belongs to, when the agent
// wants to say instead of leaving it to message-prefix extension.
const TrajectoryHeader = "X-Mgrpo-Trajectory"

// DelegationHeader, on an executor's calls, names the planner's tool call
// (its id, as the gateway answered it) that started the executor, so that
// the rollout's tree links the delegation to the trajectory it ran, as the
// built-in planner's tree does.
const DelegationHeader = "X-Mgrpo-Delegation"

// Defaults of Config.
const (
	DefaultLease          = 2 * time.Minute
	DefaultPollWait       = 30 * time.Second
	DefaultRolloutTimeout = 30 * time.Minute
	// DefaultMaxBodyBytes caps a request body: a long conversation of a
	// deep-research agent is a few MiB.
	DefaultMaxBodyBytes = 64 << 20
)

// FailureCause is the failure cause of a rollout the agent service failed:
// it answered with an error, never called the planner's URL, did not answer
// by the deadline, or let its lease run out.
const FailureCause = "agent_service"

// Config configures a Gateway.
type Config struct {
	// Mode decides the roles: planner and executor (mgrpo, frozen-sub) or
	// agent (single).
	Mode rollout.Mode
	// Models are the roles' token-exact clients (*llm.Client), by role.
	Models map[string]agents.Model
	// ModelNames are the served models' names by role, answered by
	// …/models and in every response (default: the role's name).
	ModelNames map[string]string
	// Sampling holds the run's sampling settings by role. The clients
	// apply them; the gateway reads them only to record the calls whose own
	// settings differ.
	Sampling map[string]llm.Sampling
	// MaxTokens caps each call's completion by role: the agent's
	// max_tokens when lower, else this (0: the agent's, or the role's
	// client default when the agent sends none).
	MaxTokens map[string]int
	// AgentURL is the push agent service; empty means agents pull their
	// tasks from GET /v1/tasks/next.
	AgentURL string
	// PublicURL is the gateway's address as agents reach it (default: the
	// listening address).
	PublicURL string
	// Token, when set, is the bearer token every request must carry.
	Token string
	// RolloutTimeout bounds a rollout from its offer to the agent's answer
	// (default DefaultRolloutTimeout).
	RolloutTimeout time.Duration
	// Lease is how long a pulled rollout stays the agent's without a call
	// or heartbeat (default DefaultLease).
	Lease time.Duration
	// PollWait is how long GET /v1/tasks/next holds a request when no task
	// is waiting (default DefaultPollWait).
	PollWait time.Duration
	// HTTPClient posts pushed tasks (default: a client without a timeout;
	// the rollout's deadline bounds each post).
	HTTPClient *http.Client
	// Logger receives the gateway's warnings (default: discard).
	Logger *slog.Logger
	// Metrics, when set, counts the requests its fast decoder leaves to
	// encoding/json.
	Metrics *Metrics
	// Bounds are what the gateway takes from one agent (bounds.go); zero
	// fields take DefaultBounds' values.
	Bounds Bounds
}

// Gateway serves OpenAI-compatible base URLs per rollout and role in front
// of the roles' token-exact clients, hands tasks to the user's agent (push
// or pull) and builds each rollout's tree from the calls it saw. It is a
// farm.Runner and an http.Handler; it is safe for concurrent use.
type Gateway struct {
	cfg   Config
	roles []string
	mux   *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session
	// secrets holds each open or recently finished rollout's capability
	// secret, by rollout id (see capability.go).
	secrets map[string]string
	// done remembers recently finished rollouts (a ring of ids), so that a
	// late call is told 409 rather than 404.
	done     map[string]struct{}
	doneRing []string
	doneNext int

	// offers hands pulled rollouts to GET /v1/tasks/next.
	offers chan *session
	// tools remembers the agents' tool lists (request_tools.go).
	tools toolLists
	// calls counts each open rollout's calls (bounds.go), under mu.
	calls map[string]*rolloutCalls
	// budget is the farm-wide budget of request bytes being read.
	budget *semaphore.Weighted
	// memory keeps open rollouts' Responses and Messages state
	// (api_memory.go).
	memory apiMemory
	// misuseWarned is set once foreign or unmatched calls were warned
	// about (foreign.go): once per run.
	misuseWarned atomic.Bool

	srv *http.Server
	ln  net.Listener
}

var _ farm.Runner = (*Gateway)(nil)

// doneCap bounds the finished rollouts remembered for 409 answers.
const doneCap = 1 << 16

// New validates cfg and returns a gateway; nothing listens until Listen
// (or the Handler is served by the caller).
func New(cfg Config) (*Gateway, error) {
	roles := []string{RolePlanner, RoleExecutor}
	if cfg.Mode == rollout.ModeSingle {
		roles = []string{RoleAgent}
	}
	for _, r := range roles {
		if cfg.Models[r] == nil {
			return nil, fmt.Errorf("gateway: mode %s needs a model for role %s", cfg.Mode, r)
		}
	}
	if cfg.AgentURL != "" && !strings.HasPrefix(cfg.AgentURL, "http://") && !strings.HasPrefix(cfg.AgentURL, "https://") {
		return nil, fmt.Errorf("gateway: agent URL %q: want http:// or https://", cfg.AgentURL)
	}
	if cfg.RolloutTimeout <= 0 {
		cfg.RolloutTimeout = DefaultRolloutTimeout
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = DefaultPollWait
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	cfg.Bounds = cfg.Bounds.withDefaults()
	g := &Gateway{cfg: cfg, roles: roles, sessions: map[string]*session{}, secrets: map[string]string{}, done: map[string]struct{}{},
		doneRing: make([]string, doneCap), offers: make(chan *session), calls: map[string]*rolloutCalls{},
		budget: semaphore.NewWeighted(cfg.Bounds.BodyBudget)}
	g.mux = g.routes()
	return g, nil
}

// Limits are the gateway server's limits: generations stream and polls are
// held, so no write timeout, and bodies capped at DefaultMaxBodyBytes.
func Limits() httpserve.Limits {
	l := httpserve.Streaming()
	l.MaxBodyBytes = DefaultMaxBodyBytes
	return l
}

// Listen serves the gateway on addr within limits until Close. When
// Config.PublicURL was empty, the gateway's URL becomes http://ADDR of the
// bound address.
func (g *Gateway) Listen(addr string, limits httpserve.Limits) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", addr, err)
	}
	g.ln = ln
	if g.cfg.PublicURL == "" {
		g.cfg.PublicURL = "http://" + ln.Addr().String()
	}
	g.srv = limits.Server(g)
	go func() { _ = g.srv.Serve(ln) }()
	return nil
}

// URL is the base URL agents reach the gateway at ("" before Listen
// without a PublicURL).
func (g *Gateway) URL() string { return g.cfg.PublicURL }

// Addr is the listening address, "" before Listen.
func (g *Gateway) Addr() string {
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// Close stops the server (open connections are closed). It is idempotent.
func (g *Gateway) Close() error {
	if g.srv == nil {
		return nil
	}
	err := g.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeHTTP serves the gateway's routes (see docs/gateway.md).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if messagesRoute(r.URL.Path) {
		a := &anthropicErrors{ResponseWriter: w}
		defer a.finish()
		w = a
	}
	if g.cfg.Token != "" && !g.authorized(r) {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "missing or wrong bearer token")
		return
	}
	g.bound(w, r)
	g.mux.ServeHTTP(w, r)
}

// BaseURLs returns the base URL of each role of rollout id, which carry the
// rollout's capability (its id and secret); nil for a rollout the gateway
// does not know.
func (g *Gateway) BaseURLs(id string) map[string]string {
	g.mu.Lock()
	secret, ok := g.secrets[id]
	g.mu.Unlock()
	if !ok {
		return nil
	}
	out := make(map[string]string, len(g.roles))
	for _, r := range g.roles {
		out[r] = g.cfg.PublicURL + "/r/" + capability(id, secret) + "/" + r + "/v1"
	}
	return out
}

// register adds s under its id with its capability secret.
func (g *Gateway) register(s *session, secret string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions[s.id] = s
	g.secrets[s.id] = secret
}

// retire removes s and remembers its id as finished.
func (g *Gateway) retire(s *session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.sessions, s.id)
	if old := g.doneRing[g.doneNext]; old != "" {
		delete(g.done, old)
		delete(g.secrets, old)
	}
	g.doneRing[g.doneNext] = s.id
	g.doneNext = (g.doneNext + 1) % len(g.doneRing)
	g.done[s.id] = struct{}{}
}

// lookup returns rollout id's session; finished reports a rollout that
// ended (nil session).
func (g *Gateway) lookup(id string) (s *session, finished bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.sessions[id]; s != nil {
		return s, false
	}
	_, finished = g.done[id]
	return nil, finished
}

// newID returns a fresh rollout id: 16 random bytes in hex, so ids are not
// guessable from one another and never repeat across retries.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run offers task t to the agent (push or pull), serves its calls until it
// answers or the deadline passes, and returns the tree built from what the
// gateway saw. A failure of the agent service is recorded on the planner
// trajectory as an infra failure (FailureCause), never returned.
func (g *Gateway) Run(ctx context.Context, task rollout.RolloutTask, t farm.Task) *agents.Rollout {
	s := newSession(newID(), t.Question, task.Seed)
	s.leaseFor = g.cfg.Lease
	deadline := time.Now().Add(g.cfg.RolloutTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	s.ctx = rctx
	secret := newID()
	g.register(s, secret)
	defer g.retire(s)
	defer g.forgetCalls(s.id)
	defer g.memory.forget(s.id)
	s.offer = offer{RolloutID: s.id, Task: offerTask{ID: t.ID, Question: t.Question, Metadata: t.Metadata},
		Seed: task.Seed, Deadline: deadline.UTC().Format(time.RFC3339Nano), BaseURLs: g.BaseURLs(s.id)}
	if g.pushed() {
		s.offer.Mode = ModePush
	} else {
		s.offer.Mode = ModePull
		h := g.cfg.PublicURL + "/v1/tasks/" + capability(s.id, secret)
		s.offer.ResultURL, s.offer.HeartbeatURL = h+"/result", h+"/heartbeat"
	}

	var offers chan<- *session
	if g.pushed() {
		go g.push(rctx, s)
	} else {
		offers = g.offers
	}
	tick := time.NewTicker(min(g.cfg.Lease/4, time.Second))
	defer tick.Stop()
	var o outcome
wait:
	for {
		select {
		case o = <-s.result:
			break wait
		case offers <- s:
			offers = nil
		case <-tick.C:
			if s.leaseExpired() {
				o = outcome{err: fmt.Errorf("the agent's lease of %v ran out without a call, heartbeat or result", g.cfg.Lease)}
				break wait
			}
		case <-rctx.Done():
			o = outcome{err: deadlineError(rctx, g.cfg.RolloutTimeout)}
			break wait
		}
	}
	return g.tree(s, o)
}

// deadlineError says why ctx ended: the rollout's deadline, or the run's
// cancellation.
func deadlineError(ctx context.Context, limit time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the rollout's deadline (%v) passed before the agent answered", limit)
	}
	return fmt.Errorf("the rollout was cancelled before the agent answered: %w", context.Cause(ctx))
}

// QueryAgent runs an evaluation's queries through the gateway (the
// agents' Run of one query).
type QueryAgent struct{ *Gateway }

// Run runs the query q as one rollout of the gateway's agents.
func (a QueryAgent) Run(ctx context.Context, q agents.Query) *agents.Rollout {
	return a.Gateway.Run(ctx, rollout.RolloutTask{QueryID: q.Key, Seed: q.Seed}, farm.Task{ID: q.Key, Question: q.Question})
}
