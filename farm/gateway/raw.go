package gateway

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/llm"
)

// rawPrompt is a completions prompt as the agent sent it: text, or token
// ids (ids non-nil).
type rawPrompt struct {
	text string
	ids  []int32
}

// rawState is what the next call of a completions trajectory must extend
// to continue it: the last call's prompt and the answer it got.
type rawState struct {
	// task is the first prompt's text, the trajectory's task ("" when the
	// prompt came as ids).
	task string
	// ids are the last turn's prompt ids then completion ids, as the
	// engine gave them.
	ids []int32
	// text is the last prompt's text then the completion text returned;
	// textKnown is false when the last prompt came as ids (its text is
	// not known).
	text      string
	textKnown bool
}

// extendedBy reports whether p extends the trajectory's prompt and answer,
// and by how much of them (the longest match wins): by token ids for a
// token-id prompt, by text for a text prompt.
func (st *rawState) extendedBy(p rawPrompt) (int, bool) {
	if p.ids != nil {
		n := len(st.ids)
		return n, n > 0 && len(p.ids) >= n && slices.Equal(p.ids[:n], st.ids)
	}
	return len(st.text), st.textKnown && strings.HasPrefix(p.text, st.text)
}

// acquireRaw picks the trajectory a completions call with prompt p
// continues (by header name, else the idle completions trajectory whose
// prompt and answer p extends the furthest) or starts a new one, and marks
// it busy. The caller must call releaseRaw.
func (s *session) acquireRaw(role, name, delegation string, p rawPrompt) (*trajectory, error) {
	return s.acquireBy(role, name, delegation, func() *trajectory {
		var best *trajectory
		longest := -1
		for _, t := range s.roles[role] {
			if t.busy || t.name != "" || t.raw == nil || len(t.turns) == 0 {
				continue
			}
			if n, ok := t.raw.extendedBy(p); ok && n > longest {
				best, longest = t, n
			}
		}
		if best == nil {
			best = s.add(role, "")
		}
		return best
	})
}

// releaseRaw records a completions call's result on t: its turn (nil when
// the call failed without a partial turn), callErr the failure if any. A
// call that succeeded becomes what the next call must extend.
func (s *session) releaseRaw(t *trajectory, p rawPrompt, turn *llm.Turn, callErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		// The tree was taken: a call that ends after it is not kept.
		return
	}
	t.busy = false
	t.last = time.Now()
	if t.raw == nil {
		t.raw = &rawState{}
	}
	if len(t.turns) == 0 && p.ids == nil {
		t.raw.task = p.text
	}
	if turn != nil {
		t.turns = append(t.turns, turn)
		t.steps = append(t.steps, nil)
	}
	if callErr != nil {
		if t.errMsg == "" {
			t.errMsg, t.errTurn = fmt.Sprintf("turn %d: %v", len(t.turns), callErr), len(t.turns)
		}
		return
	}
	t.raw.ids = append(append(make([]int32, 0, len(turn.PromptIDs)+len(turn.CompletionIDs)), turn.PromptIDs...), turn.CompletionIDs...)
	t.raw.text, t.raw.textKnown = p.text+turn.Message.Content, p.ids == nil
}

// task is the trajectory's task: its first user message, or the first
// prompt of a completions trajectory.
func (t *trajectory) task() string {
	if u := firstUser(t.msgs); u != "" || t.raw == nil {
		return u
	}
	return t.raw.task
}

// rawSeed derives a completions call's seed as callSeed does a chat
// call's: from the rollout's seed, the role, the prompt and the turn's
// position in its trajectory.
func rawSeed(seed int64, role string, p rawPrompt, turn int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d/raw/", seed, role, turn)
	if p.ids != nil {
		b := make([]byte, 0, 4*len(p.ids))
		for _, id := range p.ids {
			b = binary.LittleEndian.AppendUint32(b, uint32(id))
		}
		h.Write(b)
	} else {
		h.Write([]byte(p.text))
	}
	return int64(h.Sum64() >> 1)
}
