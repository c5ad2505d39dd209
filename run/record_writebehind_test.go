package run

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/agents/replay"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/store"
	"github.com/mgrpo/mgrpo/store/sqlite"
)

// echoModel answers with a turn naming the request's last message.
type echoModel struct{}

func (echoModel) Chat(_ context.Context, req llm.Request) (*llm.Turn, error) {
	last := req.Messages[len(req.Messages)-1].Content
	return &llm.Turn{Message: openai.ChatCompletionMessage{Role: "assistant", Content: "re: " + last}, FinishReason: "stop"}, nil
}

// TestRecordingBehindWriteBehind records rollouts' model calls into the
// run's store as mgrpo does (behind a write-behind buffer), each followed
// by its rollout's result, and looks at the file after every rollout
// through a second store, which sees what a crash would leave: at most the
// bound's writes are missing, and every rollout whose result is there (one
// a resumed run keeps and does not run again) has its whole recording, so
// a replay of the resumed run stays exact. Once closed, the file holds the
// whole recording and replays every call as recorded.
func TestRecordingBehindWriteBehind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "store.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	const bound = 5
	wb := store.NewWriteBehind(open(), store.WriteBehindBound{Writes: bound, Bytes: 1 << 20, Delay: time.Hour})
	rec := replay.NewRecorder(wb, nil)
	model := rec.Model("planner", echoModel{})
	crash := open()
	const rollouts = 12
	reqs := make([]llm.Request, rollouts)
	turns := make([]*llm.Turn, rollouts)
	for i := range rollouts {
		seed := int64(i)
		reqs[i] = llm.Request{TrajectoryKey: fmt.Sprintf("r/1/q%d/0/planner", i), Sampling: &llm.Sampling{Seed: &seed},
			Messages: []openai.ChatCompletionMessage{{Role: "user", Content: fmt.Sprintf("question %d", i)}}}
		var err error
		if turns[i], err = model.Chat(ctx, reqs[i]); err != nil {
			t.Fatal(err)
		}
		if err := wb.PutResult(ctx, "r", 1, fmt.Sprintf("r/1/q%d/0", i), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if held := wb.Stats().Pending; held > bound {
			t.Fatalf("after rollout %d: %d writes held, bound %d", i, held, bound)
		}
		player := replay.NewPlayer(crash)
		kept := 0
		for j := 0; j <= i; j++ {
			if _, err := crash.Result(ctx, "r", 1, fmt.Sprintf("r/1/q%d/0", j)); err != nil {
				continue
			}
			kept++
			got, err := player.Model("planner").Chat(ctx, reqs[j])
			if err != nil || !sameTurn(got, turns[j]) {
				t.Fatalf("after rollout %d, a crash keeps rollout %d's result but replays its call as %+v, %v; want %+v", i, j, got, err, turns[j])
			}
		}
		// Each rollout is three writes here (its request, its answer, its
		// result) and the recording's marker one more: a crash loses at
		// most the bound's, so at most two rollouts.
		if lost := i + 1 - kept; lost > (bound+2)/3 {
			t.Fatalf("after rollout %d a crash keeps %d results: %d lost, more than the bound of %d writes", i, kept, lost, bound)
		}
	}
	if err := wb.Close(); err != nil {
		t.Fatal(err)
	}
	player := replay.NewPlayer(open())
	for i := range rollouts {
		if got, err := player.Model("planner").Chat(ctx, reqs[i]); err != nil || !sameTurn(got, turns[i]) {
			t.Errorf("replay of rollout %d after Close = %+v, %v; want %+v", i, got, err, turns[i])
		}
	}
	if ok, err := replay.HasRecording(ctx, open()); err != nil || !ok {
		t.Errorf("HasRecording after Close = %v, %v", ok, err)
	}
}

func sameTurn(a, b *llm.Turn) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
