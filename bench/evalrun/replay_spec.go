package evalrun

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mgrpo/mgrpo/agents/replay"
)

// NoRecording is the error of an eval folder from whose recording nothing
// can be replayed.
func NoRecording(from string) error {
	return fmt.Errorf("replay: the eval in %s holds no recording (run mgrpo eval with --record to replay it)", from)
}

// ReadSpec reads the spec of the eval recorded in kv (the store of the
// eval folder from): a store that cannot be read, one that holds no
// recording (NoRecording), a recording without the spec (made by an mgrpo
// that did not keep it) and a spec that does not parse are errors saying
// so, each the user's to fix.
func ReadSpec(ctx context.Context, kv replay.KV, from string) (Spec, error) {
	var spec Spec
	raw, ok, err := kv.Get(ctx, SpecKey)
	if err != nil {
		return spec, fmt.Errorf("replay: %s: the eval's store cannot be read: %w", from, err)
	}
	if has, herr := replay.HasRecording(ctx, kv); herr != nil || !has {
		return spec, NoRecording(from)
	}
	if !ok {
		return spec, fmt.Errorf("replay: the eval in %s was recorded by an mgrpo that did not keep the eval's spec in its recording: run it again with --record", from)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return spec, fmt.Errorf("replay: %s: the eval's recorded spec: %w", from, err)
	}
	return spec, nil
}
