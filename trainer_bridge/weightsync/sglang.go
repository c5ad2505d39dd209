package weightsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgrpo/mgrpo/internal/httpretry"
)

// sglang syncs SGLang servers with /update_weights_from_disk.
type sglang struct{ *base }

var _ Syncer = (*sglang)(nil)

// updateFromDisk is SGLang's UpdateWeightFromDiskReqInput, the fields the
// sync sets (the others keep the server's defaults).
type updateFromDisk struct {
	ModelPath     string `json:"model_path"`
	WeightVersion string `json:"weight_version"`
	LoadFormat    string `json:"load_format,omitempty"`
	AbortAll      bool   `json:"abort_all_requests,omitempty"`
}

// updateAnswer is SGLang's answer to it: 200 with success true, or 400
// with success false and the reason in message.
type updateAnswer struct {
	Success *bool  `json:"success"`
	Message string `json:"message"`
}

func (s *sglang) Sync(ctx context.Context, role, ref string, version int64, step int) error {
	t, err := s.newTarget(role, ref, version, step)
	if err != nil {
		return err
	}
	if err := s.check(ctx, role, version, s.checkOne); err != nil {
		return err
	}
	return s.run(ctx, t, s.syncOne)
}

func (s *sglang) Check(ctx context.Context) error { return s.check(ctx, "", 0, s.checkOne) }

// checkOne reads the endpoint's version, which finds its version route.
func (s *sglang) checkOne(ctx context.Context, ep endpoint) error {
	_, err := s.readVersion(ctx, s.hc, ep)
	return err
}

func (s *sglang) syncOne(ctx context.Context, ep endpoint, t target, p *progress) (string, error) {
	if s.o.Pause {
		var body []byte
		if s.o.PauseMode != "" {
			body, _ = json.Marshal(map[string]string{"mode": s.o.PauseMode})
		}
		if _, err := s.hc.call(ctx, ep, "POST", "/pause_generation", body); err != nil {
			return StagePause, err
		}
		stage, err := s.updateAndVerify(ctx, ep, t, p)
		cctx, cancel := cleanup(ctx)
		defer cancel()
		if _, cerr := s.hc.call(cctx, ep, "POST", "/continue_generation", nil); cerr != nil && err == nil {
			return StageResume, fmt.Errorf("%w; generation stays paused on this endpoint", cerr)
		}
		return stage, err
	}
	return s.updateAndVerify(ctx, ep, t, p)
}

func (s *sglang) updateAndVerify(ctx context.Context, ep endpoint, t target, p *progress) (string, error) {
	body, _ := json.Marshal(updateFromDisk{ModelPath: t.path, WeightVersion: t.want, LoadFormat: s.o.LoadFormat, AbortAll: s.o.AbortAll})
	rep, err := s.hc.call(ctx, ep, "POST", "/update_weights_from_disk", body)
	if err != nil {
		var ans updateAnswer
		var se *httpretry.StatusError
		if errors.As(err, &se) && se.Code/100 == 4 {
			if json.Unmarshal([]byte(se.Message), &ans) == nil && ans.Message != "" {
				return StageUpdate, fmt.Errorf("%w: %s (model_path %q; check the weights path template and that every server can read it)", ErrRejected, ans.Message, t.path)
			}
			return StageUpdate, fmt.Errorf("%w: %w", ErrRejected, err)
		}
		return StageUpdate, err
	}
	var ans updateAnswer
	if err := json.Unmarshal(rep.body, &ans); err != nil || ans.Success == nil {
		return StageUpdate, fmt.Errorf("POST %s/update_weights_from_disk: answer without success: %s", ep.name, snippet(rep.body))
	}
	if !*ans.Success {
		return StageUpdate, fmt.Errorf("%w: %s (model_path %q)", ErrRejected, ans.Message, t.path)
	}
	p.updated = true
	if err := s.verify(ctx, ep, t); err != nil {
		return StageVerify, err
	}
	return "", nil
}
