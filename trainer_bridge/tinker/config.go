package tinker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"sort"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// serverConfig is what the bridge reads of client/config's answer, the
// server's flags for this client (the SDK's ClientConfigResponse).
type serverConfig struct {
	// found is false for a server without the route (404): it predates
	// client/config, and is spoken to as such servers were (JSON bodies,
	// the SDK's default limits, resume by model id).
	found bool
	// MaxDatums and MaxBytes bound a forward_backward request
	// (fwdbwd_max_chunk_len, fwdbwd_max_chunk_bytes_count).
	MaxDatums int `json:"fwdbwd_max_chunk_len"`
	MaxBytes  int `json:"fwdbwd_max_chunk_bytes_count"`
	// JWTAuth asks clients to trade the API key for a JWT (jwt.go).
	JWTAuth bool `json:"pjwt_auth_enabled"`
	// CredentialSource is what the SDK trades for the JWT ("api_key", or
	// "credential_cmd": a command's output); the bridge trades the key.
	CredentialSource string `json:"credential_default_source"`
	// Compress asks for zstd forward_backward bodies.
	Compress bool `json:"proto_compress_fwdbwd"`
	// ViaLoad offers create_model by load_weights.
	ViaLoad bool `json:"create_model_via_load_weights"`
}

// knownFlags are the client/config flags the bridge acts on or knows to
// have no bearing on it (the SDK's sampling, transport and dispatch
// tuning); any other is logged once, so a new server flag is noticed.
var knownFlags = []string{
	"fwdbwd_max_chunk_len", "fwdbwd_max_chunk_bytes_count", "pjwt_auth_enabled", "proto_compress_fwdbwd",
	"create_model_via_load_weights", "credential_default_source", "parallel_fwdbwd_chunks",
	"fwdbwd_dispatch_bytes_semaphore_size", "sample_dispatch_bytes_semaphore_size",
	"inflight_response_bytes_semaphore_size", "billing_exception_max_pause_duration_sec",
	"sample_no_retries", "sample_enable_stuck_detection", "sample_max_concurrent_requests",
	"use_pyqwest_transport", "sample_use_retrieve_futures",
}

// clientVersion is the sdk_version the bridge sends: mgrpo's own version
// (its module version as the build recorded it), so that a server picking
// flags by version sees a client it does not mistake for one of its SDK's
// releases.
func clientVersion() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return "mgrpo/" + v
}

// fetchConfig sends client/config, the SDK's first request, and applies
// its limits (the smaller of the server's and Config's). A 404 is a
// server that predates the route.
func (t *Trainer) fetchConfig(ctx context.Context) (serverConfig, error) {
	body, err := json.Marshal(map[string]string{"sdk_version": t.cfg.SDKVersion})
	if err != nil {
		return serverConfig{}, err
	}
	var raw map[string]json.RawMessage
	err = t.c.call(ctx, http.MethodPost, "client/config", body, &raw)
	if code := httpretry.Code(err); code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		t.log.Info("tinker server has no client/config (it predates the SDK's protobuf wire): forward_backward goes as JSON, resume reuses the model", "status", code)
		return serverConfig{}, nil
	}
	if err != nil {
		return serverConfig{}, fmt.Errorf("tinker %s: %w", t.where, err)
	}
	sc := serverConfig{found: true}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &sc); err != nil {
		return serverConfig{}, fmt.Errorf("tinker %s: client/config: %w", t.where, err)
	}
	var unknown []string
	for k := range raw {
		if !slices.Contains(knownFlags, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		t.log.Info("tinker client/config has flags the bridge does not know; ignored", "flags", unknown)
	}
	if sc.JWTAuth {
		if sc.CredentialSource != "" && sc.CredentialSource != "api_key" {
			t.log.Warn("tinker client/config names a credential source the bridge does not use; it trades the API key", "credential_default_source", sc.CredentialSource)
		}
		if err := t.startJWT(ctx); err != nil {
			return serverConfig{}, err
		}
	}
	if sc.Compress {
		t.log.Info("tinker server accepts zstd forward_backward bodies (proto_compress_fwdbwd); the bridge sends them uncompressed")
	}
	return sc, nil
}
