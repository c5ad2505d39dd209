package weightsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// vllm syncs vLLM servers: /pause, the update action, /reset_prefix_cache,
// /resume, all dev-mode routes.
type vllm struct {
	*base
	method string
	path   template   // the action's URL or route
	body   *template  // nil: no body
	argv   []template // the command, when the action is one
}

var _ Syncer = (*vllm)(nil)

// parseAction checks and parses Options.Update.
func (v *vllm) parseAction() error {
	a := v.o.Update
	switch {
	case a.isZero():
		return errors.New("no update action: set Options.Update to an HTTP call (Path, Body) or a Command that makes the server load {path}")
	case len(a.Command) > 0 && (a.Path != "" || a.Body != ""):
		return errors.New("update action: set an HTTP call (Path, Body) or a Command, not both")
	case len(a.Command) > 0:
		for _, arg := range a.Command {
			t, err := parseTemplate(arg, actionPlaceholders)
			if err != nil {
				return fmt.Errorf("update command: %w", err)
			}
			v.argv = append(v.argv, t)
		}
		return nil
	case a.Path == "":
		return errors.New("update action: an HTTP call needs a Path (a route such as /collective_rpc, or a URL)")
	}
	v.method = a.Method
	if v.method == "" {
		v.method = "POST"
	}
	t, err := parseTemplate(a.Path, actionPlaceholders)
	if err != nil {
		return fmt.Errorf("update path: %w", err)
	}
	v.path = t
	if a.Body != "" {
		bt, err := parseTemplate(a.Body, actionPlaceholders)
		if err != nil {
			return fmt.Errorf("update body: %w", err)
		}
		// The body must be JSON for any values: check it with placeholders
		// filled by sample values.
		sample := bt.expand(map[string]string{PlaceholderRef: "r", PlaceholderName: "n", PlaceholderRole: "planner", PlaceholderStep: "1", PlaceholderVersion: "1", PlaceholderPath: "/p", PlaceholderEndpoint: "http://h"}, jsonEscape)
		if !json.Valid([]byte(sample)) {
			return fmt.Errorf("update body %q is not JSON once filled in (placeholders inside JSON strings are escaped; numbers such as {step} may stand bare)", a.Body)
		}
		v.body = &bt
	}
	return nil
}

func (v *vllm) Sync(ctx context.Context, role, ref string, version int64, step int) error {
	t, err := v.newTarget(role, ref, version, step)
	if err != nil {
		return err
	}
	if err := v.check(ctx, role, version, v.checkOne); err != nil {
		return err
	}
	return v.run(ctx, t, v.syncOne)
}

func (v *vllm) Check(ctx context.Context) error { return v.check(ctx, "", 0, v.checkOne) }

// checkOne asks a dev-mode route (GET /is_paused), and reads the version
// when a version route is set.
func (v *vllm) checkOne(ctx context.Context, ep endpoint) error {
	_, err := v.hc.call(ctx, ep, "GET", "/is_paused", nil)
	if isStatus(err, 404) {
		return fmt.Errorf("%w (%w)", ErrDevMode, err)
	}
	if err != nil || v.o.VersionPath == "" {
		return err
	}
	_, err = v.readVersion(ctx, v.hc, ep)
	return err
}

// devCall is a call to a dev-mode route: a 404 means dev mode is off.
func (v *vllm) devCall(ctx context.Context, ep endpoint, route string, body []byte) error {
	_, err := v.hc.call(ctx, ep, "POST", route, body)
	if isStatus(err, 404) {
		return fmt.Errorf("%w (%w)", ErrDevMode, err)
	}
	return err
}

func (v *vllm) syncOne(ctx context.Context, ep endpoint, t target, p *progress) (string, error) {
	route := "/pause"
	if v.o.PauseMode != "" {
		route += "?mode=" + url.QueryEscape(v.o.PauseMode)
	}
	if err := v.devCall(ctx, ep, route, nil); err != nil {
		return StagePause, err
	}
	stage, err := v.update(ctx, ep, t, p)
	cctx, cancel := cleanup(ctx)
	defer cancel()
	if rerr := v.devCall(cctx, ep, "/resume", nil); rerr != nil && err == nil {
		return StageResume, fmt.Errorf("%w; generation stays paused on this endpoint", rerr)
	}
	return stage, err
}

// update runs the action, labels the version if asked, resets the prefix
// cache (cached KV was computed by the old weights) and verifies.
func (v *vllm) update(ctx context.Context, ep endpoint, t target, p *progress) (string, error) {
	vars := make(map[string]string, len(t.vars)+1)
	for k, val := range t.vars {
		vars[k] = val
	}
	vars[PlaceholderEndpoint] = ep.name
	var err error
	if v.argv != nil {
		err = v.runCommand(ctx, vars)
	} else {
		err = v.runHTTP(ctx, ep, vars)
	}
	if err != nil {
		return StageUpdate, err
	}
	p.updated = true
	if v.o.LabelVersion {
		body, _ := json.Marshal(map[string]string{"new_version": t.want})
		if err := v.devCall(ctx, ep, "/update_weight_version", body); err != nil {
			return StageLabel, err
		}
	}
	if err := v.devCall(ctx, ep, "/reset_prefix_cache", nil); err != nil {
		return StageReset, err
	}
	if v.o.VersionPath == "" {
		return "", nil
	}
	if err := v.verify(ctx, ep, t); err != nil {
		return StageVerify, err
	}
	return "", nil
}

func (v *vllm) runHTTP(ctx context.Context, ep endpoint, vars map[string]string) error {
	target := v.path.expand(vars, nil)
	shown := target
	if !strings.Contains(target, "://") {
		shown = ep.name + target
		target = ep.url(target)
	} else if u, err := url.Parse(target); err == nil {
		shown = u.Redacted()
	}
	var body []byte
	if v.body != nil {
		body = []byte(v.body.expand(vars, jsonEscape))
	}
	rep, err := v.hc.callURL(ctx, v.method, target, shown, body)
	if isStatus(err, 404) {
		return fmt.Errorf("%w; check the update action's path (vLLM serves its dev routes only with VLLM_SERVER_DEV_MODE=1)", err)
	}
	var se *httpretry.StatusError
	if errors.As(err, &se) && se.Code/100 == 4 {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if err != nil {
		return err
	}
	var ans struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if json.Unmarshal(rep.body, &ans) == nil && ans.Success != nil && !*ans.Success {
		return fmt.Errorf("%w: %s %s: %s", ErrRejected, v.method, shown, snippet(rep.body))
	}
	return nil
}

func (v *vllm) runCommand(ctx context.Context, vars map[string]string) error {
	args := make([]string, len(v.argv))
	for i, t := range v.argv {
		args[i] = t.expand(vars, nil)
	}
	cctx, cancel := context.WithTimeout(ctx, v.o.CommandTimeout)
	defer cancel()
	out, err := exec.CommandContext(cctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		tail := strings.TrimSpace(string(out))
		if len(tail) > 500 {
			tail = "…" + tail[len(tail)-500:]
		}
		return fmt.Errorf("update command %s: %w: %s", args[0], err, tail)
	}
	return nil
}
