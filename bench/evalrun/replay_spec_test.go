package evalrun

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/bench"
)

// specKV is an in-memory replay.KV whose Get fails with getErr when set.
type specKV struct {
	mu     sync.Mutex
	m      map[string][]byte
	getErr error
}

func (k *specKV) Get(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.getErr != nil {
		return nil, false, k.getErr
	}
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *specKV) Set(_ context.Context, key string, value []byte, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[key] = value
	return nil
}

// recordedKV returns a KV holding a recording (one recorded answer), with
// the eval's spec when withSpec.
func recordedKV(t *testing.T, withSpec bool) *specKV {
	t.Helper()
	ctx := context.Background()
	kv := &specKV{}
	if _, err := replay.NewRecorder(kv, nil).Text(ctx, "judge", []string{"q"}, func() (string, error) { return "a", nil }); err != nil {
		t.Fatal(err)
	}
	if withSpec {
		if err := RecordSpec(ctx, kv, Spec{Benchmark: bench.JSONL, Runs: 2}, []bench.Item{{ID: "q1", Question: "?", Answer: "!"}}); err != nil {
			t.Fatal(err)
		}
	}
	return kv
}

func TestReadSpec(t *testing.T) {
	ctx := context.Background()
	spec, err := ReadSpec(ctx, recordedKV(t, true), "ev")
	if err != nil || spec.Benchmark != bench.JSONL || spec.Runs != 2 {
		t.Fatalf("ReadSpec = %+v, %v; want the recorded jsonl spec of 2 runs", spec, err)
	}
	bad := recordedKV(t, false)
	bad.m[SpecKey] = []byte("{")
	for _, tc := range []struct {
		name string
		kv   *specKV
		want string
	}{
		{"no recording", &specKV{}, NoRecording("ev").Error()},
		{"a recording without the spec", recordedKV(t, false), "did not keep the eval's spec"},
		{"a spec that does not parse", bad, "replay: ev: the eval's recorded spec: "},
		{"a store that cannot be read", &specKV{getErr: errors.New("disk")}, "replay: ev: the eval's store cannot be read: disk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ReadSpec(ctx, tc.kv, "ev"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
