package pool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestGroupBoundsTasksAcrossGroups(t *testing.T) {
	p := New(3)
	var now, peak atomic.Int64
	task := func(context.Context) {
		n := now.Add(1)
		for {
			m := peak.Load()
			if n <= m || peak.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		now.Add(-1)
	}
	a, b := p.NewGroup(context.Background(), time.Second, nil), p.NewGroup(context.Background(), time.Second, nil)
	defer a.Close()
	defer b.Close()
	for range 20 {
		if err := a.Go(task); err != nil {
			t.Fatal(err)
		}
		if err := b.Go(task); err != nil {
			t.Fatal(err)
		}
	}
	a.Wait()
	b.Wait()
	if got := peak.Load(); got > 3 {
		t.Errorf("peak tasks in flight %d, want at most 3", got)
	}
}

func TestGroupAbandonsAfterGrace(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	g := New(2).NewGroup(ctx, 20*time.Millisecond, func(cause error) error { return fmt.Errorf("abandoned: %w", cause) })
	defer g.Close()
	got := make(chan error, 1)
	if err := g.Go(func(ctx context.Context) {
		<-ctx.Done()
		got <- context.Cause(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	why := errors.New("stop now")
	cancel(why)
	if err := g.Go(func(context.Context) { t.Error("a task started after the cancellation") }); !errors.Is(err, ErrStopped) || !errors.Is(err, why) {
		t.Errorf("Go after cancel: %v, want ErrStopped wrapping the cause", err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, why) || err.Error() != "abandoned: stop now" {
			t.Errorf("work cause %q, want abandoned: stop now", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the task was not abandoned after the grace period")
	}
	if g.Drain() {
		t.Log("the task returned before Drain looked")
	}
}

func TestGroupDrainWithinGrace(t *testing.T) {
	g := New(1).NewGroup(context.Background(), time.Minute, nil)
	defer g.Close()
	release := make(chan struct{})
	if err := g.Go(func(ctx context.Context) { <-release }); err != nil {
		t.Fatal(err)
	}
	g.Stop(errors.New("done"))
	if g.TryAcquire() {
		t.Error("TryAcquire after Stop held a slot")
	}
	close(release)
	if !g.Drain() {
		t.Error("Drain: tasks abandoned, want all returned within the grace period")
	}
	select {
	case <-g.Abandoned():
		t.Error("abandoned although every task returned within the grace period")
	default:
	}
}

func TestGroupAbandonStopsStarts(t *testing.T) {
	g := New(1).NewGroup(context.Background(), time.Minute, nil)
	defer g.Close()
	why := errors.New("write failed")
	g.Abandon(why)
	if err := g.Go(func(context.Context) {}); !errors.Is(err, why) {
		t.Errorf("Go after Abandon: %v, want the cause", err)
	}
	<-g.Abandoned()
}
