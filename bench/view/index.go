package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// maxCachedIndexes bounds the line indexes kept in memory; the oldest is
// dropped first. An index holds a few dozen bytes per line, never the
// lines themselves.
const maxCachedIndexes = 64

// lineRef locates one line of a JSONL file.
type lineRef struct {
	off int64
	n   int
}

// fileIndex is the line index of one step file and what the pages need of
// each line, read once. Step files never change once their directory is
// renamed into place; the index is still dropped when the file's size or
// modification time differs from when it was built.
type fileIndex struct {
	path  string
	size  int64
	mod   time.Time
	lines []lineRef
	// samples is set for planner.jsonl and executor.jsonl, rollouts for
	// rollouts.jsonl, aligned with lines.
	samples  []sampleMeta
	rollouts []rolloutMeta
	// byRollout maps "query\x00k" to the line numbers of that rollout, in
	// file order.
	byRollout map[string][]int
}

// sampleMeta is what a page shows of a sample without its token arrays.
type sampleMeta struct {
	Role         string          `json:"role"`
	QueryID      string          `json:"query_id"`
	Rollout      int             `json:"rollout"`
	SubIndex     *int            `json:"sub_index"`
	DuplicateOf  *rollout.SubRef `json:"duplicate_of"`
	Reward       float64         `json:"reward"`
	Advantage    float64         `json:"advantage"`
	NumTurns     int             `json:"num_turns"`
	FinishReason string          `json:"finish_reason"`
	FormatOK     bool            `json:"format_ok"`
	// FirstTurn, SampleTurns, TurnFinishReasons and SplitReason say which
	// turns of its trajectory the sample holds and why it started anew.
	FirstTurn         int      `json:"first_turn"`
	SampleTurns       int      `json:"sample_turns"`
	TurnFinishReasons []string `json:"turn_finish_reasons"`
	SplitReason       string   `json:"split_reason"`

	// Line is the sample's line number (from 0). Part and Parts place it
	// in its trajectory: a trajectory split by chat-template drift is
	// several consecutive samples with the same role, query, rollout and
	// sub_index, parts 1 to Parts.
	Line, Part, Parts int
}

// rolloutMeta is what a list shows of a rollouts.jsonl line.
type rolloutMeta struct {
	ID   string `json:"id"`
	Task struct {
		QueryID string `json:"query_id"`
		K       int    `json:"k"`
	} `json:"task"`
	Question string `json:"question"`
	Error    string `json:"error"`
	// FailureKind and FailureCause classify a failed rollout (infra or
	// model, and what failed).
	FailureKind  string `json:"failure_kind"`
	FailureCause string `json:"failure_cause"`
	Scores       struct {
		FormatOK bool    `json:"format_ok"`
		Correct  float64 `json:"correct"`
		Main     float64 `json:"main"`
	} `json:"scores"`
	// Drifts counts the drift splits of the planner (first) and each
	// executor.
	Drifts []int `json:"drifts"`
	// Tree is what the query page shows of the tree: the answer and the
	// number of turns (the turns' contents are skipped).
	Tree *struct {
		Answer  string `json:"answer"`
		Planner *struct {
			Turns []struct{} `json:"turns"`
		} `json:"planner"`
		Executors []struct{} `json:"executors"`
	} `json:"tree"`
	Line int `json:"-"`
}

// drifted reports whether any trajectory of the rollout was split by
// chat-template drift.
func (m *rolloutMeta) drifted() bool {
	for _, d := range m.Drifts {
		if d > 0 {
			return true
		}
	}
	return false
}

// answer and turns are the tree's final answer and planner turns ("" and
// 0 without a tree).
func (m *rolloutMeta) answer() string {
	if m.Tree == nil {
		return ""
	}
	return m.Tree.Answer
}

func (m *rolloutMeta) turns() int {
	if m.Tree == nil || m.Tree.Planner == nil {
		return 0
	}
	return len(m.Tree.Planner.Turns)
}

func (m *rolloutMeta) executors() int {
	if m.Tree == nil {
		return 0
	}
	return len(m.Tree.Executors)
}

// rolloutKey is the byRollout key of rollout k of query q.
func rolloutKey(q string, k int) string { return fmt.Sprintf("%s\x00%d", q, k) }

// errNoFile reports a step file that does not exist; pages treat it as
// empty (a mode without executors writes no executor samples).
var errNoFile = errors.New("no such step file")

// index returns the index of path, building it on first use. kind is
// "samples" or "rollouts".
func (h *Handler) index(path, kind string) (*fileIndex, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &fileIndex{path: path, byRollout: map[string][]int{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	h.mu.Lock()
	if ix, ok := h.indexes[path]; ok && ix.size == fi.Size() && ix.mod.Equal(fi.ModTime()) {
		h.mu.Unlock()
		return ix, nil
	}
	h.mu.Unlock()
	// Built outside the lock so that one large file does not hold up the
	// pages of others; two requests racing build it twice, harmlessly.
	ix, err := buildIndex(path, kind)
	if err != nil {
		return nil, err
	}
	ix.size, ix.mod = fi.Size(), fi.ModTime()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.indexes[path]; !ok {
		h.order = append(h.order, path)
	}
	h.indexes[path] = ix
	for len(h.order) > maxCachedIndexes {
		delete(h.indexes, h.order[0])
		h.order = h.order[1:]
	}
	return ix, nil
}

// buildIndex streams path once, recording each line's offset and metadata.
func buildIndex(path, kind string) (*fileIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", path, err)
	}
	defer f.Close()
	ix := &fileIndex{path: path, byRollout: map[string][]int{}}
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for lineNo := 1; ; lineNo++ {
		raw, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("index %s:%d: %w", path, lineNo, rerr)
		}
		start := off
		off += int64(len(raw))
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 {
			n := len(ix.lines)
			ix.lines = append(ix.lines, lineRef{off: start, n: len(raw)})
			switch kind {
			case "samples":
				var m sampleMeta
				if err := json.Unmarshal(trimmed, &m); err != nil {
					return nil, fmt.Errorf("index %s:%d: %w", path, lineNo, err)
				}
				m.Line = n
				ix.samples = append(ix.samples, m)
				key := rolloutKey(m.QueryID, m.Rollout)
				ix.byRollout[key] = append(ix.byRollout[key], n)
			case "rollouts":
				var m rolloutMeta
				if err := json.Unmarshal(trimmed, &m); err != nil {
					return nil, fmt.Errorf("index %s:%d: %w", path, lineNo, err)
				}
				m.Line = n
				ix.rollouts = append(ix.rollouts, m)
				key := rolloutKey(m.Task.QueryID, m.Task.K)
				ix.byRollout[key] = append(ix.byRollout[key], n)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	markParts(ix.samples)
	return ix, nil
}

// sameTrajectory reports whether two samples are parts of one trajectory.
func sameTrajectory(a, b *sampleMeta) bool {
	if a.Role != b.Role || a.QueryID != b.QueryID || a.Rollout != b.Rollout || (a.SubIndex == nil) != (b.SubIndex == nil) {
		return false
	}
	return a.SubIndex == nil || *a.SubIndex == *b.SubIndex
}

// markParts numbers the parts of each run of consecutive samples of the
// same trajectory.
func markParts(ss []sampleMeta) {
	for i := 0; i < len(ss); {
		j := i + 1
		for j < len(ss) && sameTrajectory(&ss[i], &ss[j]) {
			j++
		}
		for p := i; p < j; p++ {
			ss[p].Part, ss[p].Parts = p-i+1, j-i
		}
		i = j
	}
}

// readLine returns line n (from 0) of the indexed file.
func (ix *fileIndex) readLine(n int) ([]byte, error) {
	if n < 0 || n >= len(ix.lines) {
		return nil, errNoFile
	}
	f, err := os.Open(ix.path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ix.path, err)
	}
	defer f.Close()
	ref := ix.lines[n]
	buf := make([]byte, ref.n)
	if _, err := f.ReadAt(buf, ref.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s line %d: %w", ix.path, n+1, err)
	}
	return bytes.TrimSpace(buf), nil
}
