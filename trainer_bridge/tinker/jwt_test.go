package tinker_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simtrainer "github.com/mgrpo/mgrpo/sim/trainer"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/tinker"
	"github.com/mgrpo/mgrpo/trainer_bridge/trainertest"
)

// testClock is a clock the test moves by hand, shared by the sim trainer
// (which judges a JWT's expiry by it) and the bridge (which refreshes by
// it), so that expiry is a recorded fact and not a race with the wall.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jwtLife is the sim's token lifetime in these tests: the SDK refreshes
// five minutes before expiry, so a ten-minute token is refreshed after
// five.
const jwtLife = 10 * time.Minute

// newJWTSim serves the sim trainer in JWT mode on clk (nil: time.Now),
// through wrap when given.
func newJWTSim(t *testing.T, faults simtrainer.Faults, clk *testClock, wrap func(http.Handler) http.Handler) (*simtrainer.Server, string) {
	t.Helper()
	cfg := simtrainer.Config{
		Policy: simtrainer.Toy{Vocab: 16}, BaseModels: []string{testModel}, CheckpointDir: t.TempDir(),
		APIKey: testKey, Seed: 11, Faults: faults, JWTLifetime: jwtLife, SessionTTL: 24 * time.Hour,
	}
	if clk != nil {
		cfg.Now = clk.now
	}
	s := simtrainer.New(cfg)
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs.URL
}

// TestJWTConformanceAgainstSimTrainer runs the conformance suite against
// the sim trainer in JWT mode, with faults: the bridge trades its key at
// auth/token and every training request carries the JWT (the sim refuses
// the key there).
func TestJWTConformanceAgainstSimTrainer(t *testing.T) {
	s, url := newJWTSim(t, simFaults, nil, nil)
	t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", testKey)
	trainertest.Run(t, resumingOpener(url))
	issued, refused := s.JWTCounts()
	if issued == 0 || refused != 0 {
		t.Errorf("sim JWTCounts: %d issued, %d refused; want some issued, none refused", issued, refused)
	}
	t.Logf("JWTs issued %d; faults %v", issued, s.FaultCounts())
}

// TestJWTRefreshedMidRun: the token expires between steps (the clock moves
// past its refresh margin, and once past its expiry); the bridge trades
// the key again before sending, so no request is refused and every step
// trains. Neither the key nor a JWT appears in the log.
func TestJWTRefreshedMidRun(t *testing.T) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	s, url := newJWTSim(t, simFaults, clk, nil)
	t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", testKey)
	var logs bytes.Buffer
	cfg := fastConfig()
	cfg.Now = clk.now
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o := trainerbridge.Options{Run: "jwt", Role: rollout.RolePlanner, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY",
		Adam: trainerbridge.AdamParams{LearningRate: 0.05}}
	tr, err := tinker.New("tinker+"+url, o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := trainertest.Context(t)
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// Moves after steps 1..3: within the margin (no trade), past it
	// (a trade), past expiry (a trade).
	moves := []time.Duration{2 * time.Minute, 4 * time.Minute, 11 * time.Minute}
	wantIssued := 1
	for step := 1; step <= 4; step++ {
		plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: o.Run, Step: step, PolicyVersion: int64(step - 1), Seed: uint64(step)})
		res, err := tr.Train(ctx, plan)
		if err != nil {
			t.Fatalf("step %d: Train: %v", step, err)
		}
		if res.Version != int64(step) {
			t.Errorf("step %d: version %d", step, res.Version)
		}
		if step <= len(moves) {
			clk.add(moves[step-1])
		}
	}
	wantIssued += 2
	issued, refused := s.JWTCounts()
	if issued != wantIssued || refused != 0 {
		t.Errorf("sim JWTCounts: %d issued, %d refused; want %d issued (the first, then one past the margin, one past expiry), none refused", issued, refused, wantIssued)
	}
	if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), "eyJ") {
		t.Errorf("the log shows the key or a JWT:\n%s", logs.String())
	}
}

// TestJWTWrongKey: a key the server refuses stops Start with ErrRejected
// naming the trainer's URL and not the key, whether client/config refuses
// it or (its check passed by a proxy) auth/token does.
func TestJWTWrongKey(t *testing.T) {
	const wrong = "tml-wrong-key-9876543210"
	passConfig := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/client/config") {
				r.Header.Set("X-API-Key", testKey)
			}
			h.ServeHTTP(w, r)
		})
	}
	for _, tc := range []struct {
		name, route string
		wrap        func(http.Handler) http.Handler
	}{{"client/config refuses", "client/config", nil}, {"auth/token refuses", "auth/token", passConfig}} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := newJWTSim(t, simFaultsNone, nil, tc.wrap)
			t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", wrong)
			o := trainerbridge.Options{Run: "jwt", Role: rollout.RolePlanner, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY"}
			tr, err := tinker.New("tinker+"+url, o, fastConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			err = tr.Start(trainertest.Context(t))
			if err == nil {
				t.Fatal("Start with a wrong key succeeded")
			}
			msg := err.Error()
			if !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(msg, url) || !strings.Contains(msg, tc.route) || !strings.Contains(msg, "401") {
				t.Errorf("Start: %v; want ErrRejected naming %s, %s and 401", err, url, tc.route)
			}
			if strings.Contains(msg, wrong) || strings.Contains(msg, testKey) {
				t.Errorf("Start's error shows a key: %v", err)
			}
			if issued, _ := s.JWTCounts(); issued != 0 {
				t.Errorf("%d JWTs issued for a wrong key", issued)
			}
			t.Logf("%v", err)
		})
	}
}

// TestJWTRefreshRefusedMidRun: when the token has expired and auth/token
// refuses the key from then on, the next step fails at once with
// ErrRejected saying the JWT could not be refreshed, naming the URL and not
// the key, and nothing is sent without a token.
func TestJWTRefreshRefusedMidRun(t *testing.T) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	var refuse sync.Mutex
	refusing := false
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			refuse.Lock()
			no := refusing
			refuse.Unlock()
			if no && strings.HasSuffix(r.URL.Path, "/auth/token") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"detail":"API key revoked"}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	s, url := newJWTSim(t, simFaultsNone, clk, wrap)
	t.Setenv("MGRPO_TEST_SIM_TINKER_KEY", testKey)
	cfg := fastConfig()
	cfg.Now = clk.now
	o := trainerbridge.Options{Run: "jwt", Role: rollout.RolePlanner, BaseModel: testModel, APIKeyEnv: "MGRPO_TEST_SIM_TINKER_KEY"}
	tr, err := tinker.New("tinker+"+url, o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx := trainertest.Context(t)
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	refuse.Lock()
	refusing = true
	refuse.Unlock()
	clk.add(jwtLife)
	plan, _ := trainertest.MustBatches(t, trainertest.BatchSpec{Run: o.Run, Step: 1, Seed: 1})
	_, err = tr.Train(ctx, plan)
	if err == nil {
		t.Fatal("Train with an expired JWT and auth/token refusing succeeded")
	}
	msg := err.Error()
	if !errors.Is(err, trainerbridge.ErrRejected) || !strings.Contains(msg, "JWT refresh") || !strings.Contains(msg, "API key revoked") ||
		!strings.Contains(msg, url) || strings.Contains(msg, testKey) || strings.Count(msg, "rejected") != 1 {
		t.Errorf("Train: %v; want one ErrRejected saying the JWT refresh failed, naming %s and not the key", err, url)
	}
	if _, refused := s.JWTCounts(); refused != 0 {
		t.Errorf("%d requests reached the sim without a valid JWT", refused)
	}
	t.Logf("%v", err)
}
