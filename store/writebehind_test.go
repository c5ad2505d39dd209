package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/store"
)

// flakyBatcher applies batches into got, or fails while fail is set. The
// rest of store.Store is not used.
type flakyBatcher struct {
	store.Store
	fail error
	got  []string
}

func (f *flakyBatcher) ApplyWrites(_ context.Context, ws []store.Write) error {
	if f.fail != nil {
		return f.fail
	}
	for _, w := range ws {
		f.got = append(f.got, w.TaskID)
	}
	return nil
}

func (f *flakyBatcher) Close() error { return nil }

// TestWriteBehindKeepsAFailedBatch: a batch the backend refuses stays
// held, the write that finds the buffer full gets the error (so the
// caller's retries see a failing store) and is not taken, and once the
// backend is back every write is applied once, in order.
func TestWriteBehindKeepsAFailedBatch(t *testing.T) {
	ctx := context.Background()
	down := errors.New("store down")
	f := &flakyBatcher{fail: down}
	w := store.NewWriteBehind(f, store.WriteBehindBound{Writes: 3, Bytes: 1 << 20, Delay: time.Hour})
	for i := range 3 {
		if err := w.PutResult(ctx, "r", 1, fmt.Sprint(i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.PutResult(ctx, "r", 1, "3", []byte(`{}`)); !errors.Is(err, down) {
		t.Fatalf("a write past the bound with the backend down: %v, want its error", err)
	}
	if st := w.Stats(); st.Pending != 3 || st.Writes != 0 {
		t.Fatalf("stats %+v: want the 3 writes still held", st)
	}
	f.fail = nil
	if err := w.PutResult(ctx, "r", 1, "3", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.got) != "[0 1 2 3]" {
		t.Errorf("applied %v, want [0 1 2 3]", f.got)
	}
}
