package weightsync

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	simllm "github.com/mgrpo/mgrpo/sim/llm"
)

// TestSGLangSyncsEveryEndpoint syncs a pool of two SGLang sims inside
// pause_generation … continue_generation: both load the templated path,
// serve the new version, and saw the calls in order.
func TestSGLangSyncsEveryEndpoint(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	b := MustSim(t, simllm.DialectSGLang, nil, nil)
	o := fastOptions()
	o.PathTemplate = "/mnt/ckpt/{role}/step-{step}"
	o.Pause = true
	s := MustNew(t, KindSGLang, []*simEndpoint{a, b}, o)
	if err := s.Sync(context.Background(), "planner", "tinker://run/weights/step-3", 3, 3); err != nil {
		t.Fatal(err)
	}
	// The check before any change, then the update and its verification.
	want := []string{"GET /get_weight_version", "POST /pause_generation", "POST /update_weights_from_disk", "GET /get_weight_version", "POST /continue_generation"}
	for _, e := range []*simEndpoint{a, b} {
		if got := e.sim.WeightVersion(); got != "3" {
			t.Errorf("%s serves version %q, want 3", e.URL(), got)
		}
		if got := e.sim.ModelPath(); got != "/mnt/ckpt/planner/step-3" {
			t.Errorf("%s loaded %q, want /mnt/ckpt/planner/step-3", e.URL(), got)
		}
		if got := e.Routes(); !slices.Equal(got, want) {
			t.Errorf("%s saw %v, want %v", e.URL(), got, want)
		}
	}
}

// TestSGLangOneEndpointFails: the second endpoint refuses the update; the
// error names it and the stage, and says the first is on the new version
// and the second still on the old one.
func TestSGLangOneEndpointFails(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	b := MustSim(t, simllm.DialectSGLang, nil, onRoute("/update_weights_from_disk", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"success":false,"message":"Failed to get weights iterator: /mnt/ckpt/planner/step-3 (repository not found).","num_paused_requests":0}`))
	}))
	o := fastOptions()
	o.PathTemplate = "/mnt/ckpt/{role}/step-{step}"
	s := MustNew(t, KindSGLang, []*simEndpoint{a, b}, o)
	err := s.Sync(context.Background(), "planner", "x", 3, 3)
	var se *SyncError
	if !errors.As(err, &se) {
		t.Fatalf("Sync: %v, want a *SyncError", err)
	}
	if !errors.Is(err, ErrRejected) {
		t.Errorf("error does not wrap ErrRejected: %v", err)
	}
	if len(se.Failed) != 1 || se.Failed[0].Endpoint != b.URL() || se.Failed[0].Stage != StageUpdate {
		t.Errorf("Failed = %+v, want %s at stage update", se.Failed, b.URL())
	}
	wantStanding := []EndpointVersion{{Endpoint: a.URL(), Updated: true, Version: "3"}, {Endpoint: b.URL(), Version: simllm.DefaultWeightVersion}}
	if !slices.Equal(se.Endpoints, wantStanding) {
		t.Errorf("Endpoints = %+v, want %+v", se.Endpoints, wantStanding)
	}
	if !se.Mixed() {
		t.Error("Mixed() = false with one endpoint updated and one not")
	}
	t.Log(err)
	mustContain(t, err.Error(), b.URL()+": update", "repository not found", a.URL()+" on version 3, updated",
		b.URL()+" on version default, not updated", "mixes versions", "stop the run")
}

// TestSGLangVerifyCatchesStaleServer: an endpoint answers success but keeps
// serving the old version; verification catches it.
func TestSGLangVerifyCatchesStaleServer(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	b := MustSim(t, simllm.DialectSGLang, nil, onRoute("/update_weights_from_disk", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"success":true,"message":"Succeeded to update model weights.","num_paused_requests":0}`))
	}))
	s := MustNew(t, KindSGLang, []*simEndpoint{a, b}, fastOptions())
	err := s.Sync(context.Background(), "executor", "/ckpt/step-5", 5, 5)
	if !errors.Is(err, ErrNotVerified) {
		t.Fatalf("Sync: %v, want ErrNotVerified", err)
	}
	var se *SyncError
	errors.As(err, &se)
	if len(se.Failed) != 1 || se.Failed[0].Endpoint != b.URL() || se.Failed[0].Stage != StageVerify {
		t.Errorf("Failed = %+v, want %s at stage verify", se.Failed, b.URL())
	}
	mustContain(t, err.Error(), `reports "default", want "5"`, b.URL()+" on version default, updated")
}

// TestSGLangRetriesTransientFailures: two 503s, then the update goes
// through.
func TestSGLangRetriesTransientFailures(t *testing.T) {
	var n atomic.Int32
	a := MustSim(t, simllm.DialectSGLang, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/update_weights_from_disk" && n.Add(1) <= 2 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s := MustNew(t, KindSGLang, []*simEndpoint{a}, fastOptions())
	if err := s.Sync(context.Background(), "planner", "/ckpt/1", 1, 1); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d update attempts, want 3", got)
	}
}

// TestSGLangUnreachableEndpoint: a closed port is retried for RetryFor by
// the check that runs before any endpoint changes, so the sync stops with
// the whole pool on its old version.
func TestSGLangUnreachableEndpoint(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	dead := MustSim(t, simllm.DialectSGLang, nil, nil)
	dead.ts.Close()
	o := fastOptions()
	o.RetryFor = 100 * o.Backoff(0, 0, 0, nil)
	s := MustNew(t, KindSGLang, []*simEndpoint{a, dead}, o)
	err := s.Sync(context.Background(), "planner", "/ckpt/2", 2, 2)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Sync: %v, want ErrUnavailable", err)
	}
	var se *SyncError
	if !errors.As(err, &se) || !se.Preflight || se.Mixed() {
		t.Errorf("SyncError %+v: want Preflight and no mix", se)
	}
	t.Log(err)
	mustContain(t, err.Error(), "stopped before changing anything", dead.URL()+": check", "connection refused",
		a.URL()+" on version default, not updated", dead.URL()+" on an unknown version", "No endpoint was changed")
	if a.sim.WeightLoads() != 0 {
		t.Error("the reachable endpoint was updated")
	}
	if err := s.Check(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Check: %v, want ErrUnavailable", err)
	}
}

// TestSGLangVersionRouteFallback: a server that moved the version off
// /get_weight_version (newer SGLang answers 404 there) is verified through
// the next routes, here /get_model_info.
func TestSGLangVersionRouteFallback(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, onRoute("/get_weight_version", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"detail":"Endpoint '/get_weight_version' is deprecated."}`, http.StatusNotFound)
	}))
	s := MustNew(t, KindSGLang, []*simEndpoint{a}, fastOptions())
	for v := int64(1); v <= 2; v++ {
		if err := s.Sync(context.Background(), "planner", "/ckpt", v, int(v)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"GET /get_weight_version", "GET /weight_version", "GET /model_info", "GET /get_model_info", "POST /update_weights_from_disk", "GET /get_model_info",
		"GET /get_model_info", "POST /update_weights_from_disk", "GET /get_model_info"}
	if got := a.Routes(); !slices.Equal(got, want) {
		t.Errorf("routes %v, want %v (the route found is remembered)", got, want)
	}
}

func TestSyncWithoutWeights(t *testing.T) {
	a := MustSim(t, simllm.DialectSGLang, nil, nil)
	s := MustNew(t, KindSGLang, []*simEndpoint{a}, fastOptions())
	if err := s.Sync(context.Background(), "planner", "", 1, 1); !errors.Is(err, ErrNoWeights) {
		t.Errorf("Sync without a reference: %v, want ErrNoWeights", err)
	}
	if len(a.Routes()) != 0 {
		t.Errorf("the server was called: %v", a.Routes())
	}
}
