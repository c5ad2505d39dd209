package weightsync

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// simAction is the update action of the vLLM sim (docs/weight-sync.md).
var simAction = UpdateAction{Path: "/sim/update_weights", Body: `{"model_path": "{path}", "weight_version": "{version}"}`}

// TestVLLMSyncsEveryEndpoint syncs two vLLM sims: pause, the update
// action, reset_prefix_cache, verification through /weight_info, resume.
func TestVLLMSyncsEveryEndpoint(t *testing.T) {
	a := MustSim(t, simllm.DialectVLLM, nil, nil)
	b := MustSim(t, simllm.DialectVLLM, nil, nil)
	o := fastOptions()
	o.PathTemplate = "/mnt/ckpt/{role}/{name}"
	o.Update = simAction
	o.VersionPath = "/weight_info"
	o.PauseMode = "wait"
	s := MustNew(t, KindVLLM, []*simEndpoint{a, b}, o)
	if err := s.Sync(context.Background(), "executor", "tinker://run/weights/step-4", 4, 4); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /is_paused", "GET /weight_info", "POST /pause", "POST /sim/update_weights", "POST /reset_prefix_cache", "GET /weight_info", "POST /resume"}
	for _, e := range []*simEndpoint{a, b} {
		if got := e.sim.WeightVersion(); got != "4" {
			t.Errorf("%s serves version %q, want 4", e.URL(), got)
		}
		if got := e.sim.ModelPath(); got != "/mnt/ckpt/executor/step-4" {
			t.Errorf("%s loaded %q", e.URL(), got)
		}
		if got := e.Routes(); !slices.Equal(got, want) {
			t.Errorf("%s saw %v, want %v", e.URL(), got, want)
		}
	}
}

// TestVLLMWithoutDevMode: a server started without VLLM_SERVER_DEV_MODE
// answers 404 on the dev routes; the check before any change finds it and
// the error says to set the variable. A dev route missing half way (here
// /reset_prefix_cache) says the same, after the update.
func TestVLLMWithoutDevMode(t *testing.T) {
	a := MustSim(t, simllm.DialectVLLM, nil, nil)
	b := MustSim(t, simllm.DialectVLLM, func(c *simllm.Config) { c.NoDevMode = true }, nil)
	o := fastOptions()
	o.Update = simAction
	s := MustNew(t, KindVLLM, []*simEndpoint{a, b}, o)
	err := s.Sync(context.Background(), "planner", "/ckpt/1", 1, 1)
	if !errors.Is(err, ErrDevMode) {
		t.Fatalf("Sync: %v, want ErrDevMode", err)
	}
	t.Log(err)
	mustContain(t, err.Error(), b.URL()+": check", "VLLM_SERVER_DEV_MODE=1", "No endpoint was changed")
	if got := b.Routes(); !slices.Equal(got, []string{"GET /is_paused"}) {
		t.Errorf("the server without dev mode saw %v, want only the check", got)
	}
	if a.sim.WeightLoads() != 0 || b.sim.WeightLoads() != 0 {
		t.Error("an endpoint was updated")
	}

	c := MustSim(t, simllm.DialectVLLM, nil, onRoute("/reset_prefix_cache", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
	}))
	s = MustNew(t, KindVLLM, []*simEndpoint{c}, o)
	err = s.Sync(context.Background(), "planner", "/ckpt/1", 1, 1)
	var se *SyncError
	if !errors.As(err, &se) || !errors.Is(err, ErrDevMode) || se.Failed[0].Stage != StageReset || !se.Endpoints[0].Updated {
		t.Fatalf("Sync: %v; want ErrDevMode at %q after the update", err, StageReset)
	}
	mustContain(t, err.Error(), "VLLM_SERVER_DEV_MODE=1", "took the version-1 weights, unverified")
}

// TestVLLMVerifyCatchesStaleServer: the update action answers 200 but the
// server keeps its version; with a version route the sync notices.
func TestVLLMVerifyCatchesStaleServer(t *testing.T) {
	a := MustSim(t, simllm.DialectVLLM, nil, onRoute("/sim/update_weights", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	o := fastOptions()
	o.Update = simAction
	o.VersionPath = "/weight_info"
	s := MustNew(t, KindVLLM, []*simEndpoint{a}, o)
	err := s.Sync(context.Background(), "planner", "/ckpt/2", 2, 2)
	if !errors.Is(err, ErrNotVerified) {
		t.Fatalf("Sync: %v, want ErrNotVerified", err)
	}
	if got := a.Routes(); !slices.Contains(got, "POST /resume") {
		t.Errorf("routes %v: the failed sync did not resume generation", got)
	}
}

// TestVLLMCommandAction runs the update as a command, then labels the
// version with /update_weight_version; a failing command's output is in
// the error.
func TestVLLMCommandAction(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	a := MustSim(t, simllm.DialectVLLM, nil, nil)
	o := fastOptions()
	o.PathTemplate = "/ckpt/{role}/step-{step:3}"
	o.Update = UpdateAction{Command: []string{sh, "-c", `test "$1" = /ckpt/planner/step-007 && test "$2" = "{endpoint}"`, "load", "{path}", "{endpoint}"}}
	o.LabelVersion = true
	o.VersionPath = "/weight_info"
	s := MustNew(t, KindVLLM, []*simEndpoint{a}, o)
	if err := s.Sync(context.Background(), "planner", "r", 7, 7); err != nil {
		t.Fatal(err)
	}
	if a.sim.WeightVersion() != "7" {
		t.Errorf("version %q, want 7", a.sim.WeightVersion())
	}

	o.Update = UpdateAction{Command: []string{sh, "-c", "echo no checkpoint at {path} >&2; exit 3"}}
	s = MustNew(t, KindVLLM, []*simEndpoint{a}, o)
	err = s.Sync(context.Background(), "planner", "r", 8, 8)
	var se *SyncError
	if !errors.As(err, &se) || se.Failed[0].Stage != StageUpdate {
		t.Fatalf("Sync: %v, want a failure at the update", err)
	}
	mustContain(t, err.Error(), "exit status 3", "no checkpoint at /ckpt/planner/step-008", "on version 7, not updated")
}

// TestNoneKind: without a version route nothing is called; with one, the
// sync waits for the trainer's push to show.
func TestNoneKind(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	s := MustNew(t, KindNone, []*simEndpoint{a}, fastOptions())
	if err := s.Sync(context.Background(), "planner", "", 1, 1); err != nil || len(a.Routes()) != 0 {
		t.Fatalf("Sync: %v, routes %v; want nil and no call", err, a.Routes())
	}
	o := fastOptions()
	o.VersionPath = "/get_weight_version"
	s = MustNew(t, KindNone, []*simEndpoint{a}, o)
	a.sim.SetWeightVersion("2")
	if err := s.Sync(context.Background(), "planner", "", 2, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(context.Background(), "planner", "", 3, 3); !errors.Is(err, ErrNotVerified) {
		t.Fatalf("Sync to a version the server never reports: %v, want ErrNotVerified", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		eps        []string
		o          Options
		want       string
	}{
		{"unknown kind", "tgi", []string{"http://h"}, Options{}, `unknown weight sync "tgi"`},
		{"no endpoints", KindSGLang, nil, Options{}, "no endpoints"},
		{"not a URL", KindSGLang, []string{"h:30000"}, Options{}, "want an http:// or https:// base URL"},
		{"password hidden", KindSGLang, []string{"ftp://u:secret@h"}, Options{}, "u:xxxxx@h"},
		{"bad template", KindSGLang, []string{"http://h"}, Options{PathTemplate: "/c/{stp}"}, "unknown placeholder {stp}"},
		{"bad pause mode", KindSGLang, []string{"http://h"}, Options{PauseMode: "wait"}, "SGLang takes abort, retract or in_place"},
		{"vllm without action", KindVLLM, []string{"http://h"}, Options{}, "no update action"},
		{"vllm with both actions", KindVLLM, []string{"http://h"}, Options{Update: UpdateAction{Path: "/x", Command: []string{"x"}}}, "not both"},
		{"vllm body not JSON", KindVLLM, []string{"http://h"}, Options{Update: UpdateAction{Path: "/x", Body: `{"p": {path}}`}}, "is not JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.kind, c.eps, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New: %v, want an error containing %q", err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
