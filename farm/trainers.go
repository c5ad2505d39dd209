package farm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/redact"
	trainerbridge "github.com/mgrpo/mgrpo/trainer_bridge"
	"github.com/mgrpo/mgrpo/trainer_bridge/weightsync"
)

// OpenTrainer opens the trainer at rawURL for o.Role, restores it from
// state when the run saved one, and starts it, so that a trainer that is
// down, mistyped or serves no such base model is reported before any
// rollout (a slow start is logged every startProgressEvery). On an error
// the trainer, when opened, is closed.
func OpenTrainer(ctx context.Context, rawURL string, o trainerbridge.Options, state []byte, logger *slog.Logger) (trainerbridge.Trainer, error) {
	role := o.Role
	tr, err := trainerbridge.Open(ctx, rawURL, o)
	if err != nil {
		return nil, fmt.Errorf("%s trainer: %w", role, err)
	}
	if err := startTrainer(ctx, tr, rawURL, o, state, logger); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

// startTrainer resumes tr from state (when set), checks that its host
// accepts a connection, and starts it.
func startTrainer(ctx context.Context, tr trainerbridge.Trainer, rawURL string, o trainerbridge.Options, state []byte, logger *slog.Logger) error {
	role, shown := o.Role, redact.URL(rawURL)
	if state != nil {
		r, ok := tr.(trainerbridge.Resumer)
		if !ok {
			return fmt.Errorf("%s trainer %s: the run saved a trainer state this backend cannot resume from (was the trainer URL changed?)", role, shown)
		}
		if err := r.Resume(state); err != nil {
			return fmt.Errorf("%s trainer %s: resume: %w", role, shown, err)
		}
	}
	if err := reachable(ctx, rawURL); err != nil {
		return fmt.Errorf("%s trainer %s: before any rollout: unreachable: %w", role, shown, err)
	}
	if err := startShowingProgress(ctx, tr, fmt.Sprintf("%s trainer %s", role, shown), logger); err != nil {
		return fmt.Errorf("%s trainer %s: before any rollout: %w", role, shown, err)
	}
	return nil
}

// NewSyncer returns the weight sync of kind for a role's endpoints, its
// pause around an update chosen for the run's asynchrony (syncPause). An
// error is the sync's configuration's; Check it before any rollout.
func NewSyncer(kind string, endpoints []string, o weightsync.Options, maxStaleness int) (weightsync.Syncer, error) {
	o.Pause, o.PauseMode = syncPause(kind, maxStaleness)
	return weightsync.New(kind, endpoints, o)
}

// syncPause returns how a sync of kind pauses the servers around an update.
// On-policy (maxStaleness 0) nothing is in flight at an update and the
// syncs keep their defaults. Asynchronously rollouts are in flight, and no
// request may be lost: SGLang pauses with mode in_place (running requests
// stay where they are and go on after /continue_generation), vLLM with
// mode keep (requests are frozen and resume after /resume; its default,
// abort, would end them). Under --partial-rollouts restart the farm has
// cancelled its rollouts before the sync, so the same modes only matter
// for requests it does not own.
func syncPause(kind string, maxStaleness int) (pause bool, mode string) {
	if maxStaleness <= 0 {
		return false, ""
	}
	switch kind {
	case weightsync.KindSGLang:
		return true, "in_place"
	case weightsync.KindVLLM:
		return true, "keep"
	}
	return false, ""
}

// reachTimeout bounds the connection preflight makes to a trainer before
// starting it: a trainer that accepts no connection in it is down or
// mistyped, and a run should say so at once, not after its client's
// retries.
const reachTimeout = 10 * time.Second

// reachable dials the host of an http(s) or tinker+http(s) trainer URL;
// other schemes (file://) have nothing to dial.
func reachable(ctx context.Context, raw string) error {
	u, err := url.Parse(strings.TrimPrefix(raw, "tinker+"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	dctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) {
			return oe.Err
		}
		return err
	}
	return conn.Close()
}

// startProgressEvery is how often a trainer's start that takes a while
// (a model session being created) says it is still waiting.
const startProgressEvery = 10 * time.Second

// startShowingProgress starts tr, logging every startProgressEvery that
// the run is still waiting for it, so a slow trainer is not silence.
func startShowingProgress(ctx context.Context, tr trainerbridge.Trainer, what string, logger *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- tr.Start(ctx) }()
	began := time.Now()
	tick := time.NewTicker(startProgressEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			logger.Info("waiting for the trainer to start", "trainer", what, "waited", time.Since(began).Round(time.Second).String())
		}
	}
}
