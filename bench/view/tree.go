package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mgrpo/mgrpo/rollout"
)

// record is one line of rollouts.jsonl as the farm writes it.
type record = rollout.RolloutRecord

// readRecord decodes line n of an indexed rollouts.jsonl.
func readRecord(ix *fileIndex, n int) (*record, error) {
	raw, err := ix.readLine(n)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("read %s line %d: %w", ix.path, n+1, err)
	}
	return &rec, nil
}

// trajView is one trajectory of the tree as the page shows it.
type trajView struct {
	Anchor       string
	Title        string
	Task         string
	Turns        []turnView
	Final        string
	Answer       string
	FormatOK     bool
	FormatErrors []string
	Error        string
	// FailureKind and FailureCause classify Error; FailureTurn is the
	// number (as the turns are listed, from 1) of the turn it happened on,
	// 0 when none is recorded.
	FailureKind, FailureCause string
	FailureTurn               int
	AnswerNow                 bool
	Drifts                    int
	// Splits are the declared splits (history edits) with where and why.
	Splits []rollout.SplitRecord
	Sub    *rollout.SubScore
	// Samples are the trajectory's sample lines in executor.jsonl (the
	// planner's are on the rollout row).
	Samples []sampleMeta
}

// turnView is one model call and the tool calls it made.
type turnView struct {
	N                int
	Reasoning        string
	Content          string
	Finish           string
	PromptTokens     int
	CompletionTokens int
	Calls            []callView
	FormatError      string
	FormatRaw        string
}

// callView is one tool call with its observation.
type callView struct {
	Name        string
	Arguments   string
	Observation string
	Failed      bool
	Class       string
	Error       string
	// Executor is the anchor of the executor trajectory a delegate call
	// started, empty otherwise.
	Executor string
}

// rolloutPage is the rollout page's data.
type rolloutPage struct {
	Step  stepData
	Row   rolloutRow
	Rec   *record
	Trajs []trajView
	// Entries are the rollout's aligned executor entries in executor.jsonl
	// (duplicates and borrowed entries included).
	Entries []sampleMeta
}

// trajectoryView converts a trajectory of the tree.
func trajectoryView(t *rollout.TrajectoryRecord, anchor, title string) trajView {
	v := trajView{Anchor: anchor, Title: title}
	if t == nil {
		v.Error = "no trajectory recorded"
		return v
	}
	v.Task, v.Final, v.Answer, v.FormatOK, v.FormatErrors, v.Error, v.AnswerNow =
		t.Task, t.Final, t.Answer, t.FormatOK, t.FormatErrors, t.Error, t.AnswerNow
	v.FailureKind, v.FailureCause = string(t.FailureKind), t.FailureCause
	v.Splits = t.Splits
	if t.FailureTurn != nil {
		v.FailureTurn = *t.FailureTurn + 1
	}
	// Steps are aligned with Turns; a record with more of either still
	// shows all of both.
	for i := range max(len(t.Turns), len(t.Steps)) {
		tv := turnView{N: i + 1}
		if i < len(t.Turns) && t.Turns[i] != nil {
			turn := t.Turns[i]
			tv.Reasoning, tv.Content, tv.Finish = turn.Message.ReasoningContent, turn.Message.Content, turn.FinishReason
			tv.PromptTokens, tv.CompletionTokens = turn.Usage.PromptTokens, turn.Usage.CompletionTokens
		}
		if i < len(t.Steps) {
			st := t.Steps[i]
			tv.FormatError, tv.FormatRaw = st.FormatError, st.FormatRaw
			for _, c := range st.Calls {
				cv := callView{Name: c.Name, Arguments: compactJSON(c.Arguments), Observation: c.Observation,
					Failed: c.Meta.Failed() && c.Meta.Class != "", Class: string(c.Meta.Class), Error: c.Meta.Error}
				if c.Executor >= 0 {
					cv.Executor = "executor-" + strconv.Itoa(c.Executor)
				}
				tv.Calls = append(tv.Calls, cv)
			}
		}
		v.Turns = append(v.Turns, tv)
	}
	return v
}

// compactJSON returns raw compacted, or as it is when it does not parse.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func (h *Handler) serveRollout(w http.ResponseWriter, r *http.Request) {
	d, stats, sf, err := h.stepBase(r)
	q := r.PathValue("query")
	k, kerr := strconv.Atoi(r.PathValue("k"))
	var p rolloutPage
	if err == nil && kerr != nil {
		err = notFound("rollout %q: not a rollout number", r.PathValue("k"))
	}
	if err == nil && d.Writing {
		err = notFound("step %d is in progress: its files are being written", d.Step)
	}
	if err == nil {
		d.QueryID = q
		p.Step = d
		lines := sf.rollouts.byRollout[rolloutKey(q, k)]
		if len(lines) == 0 {
			err = notFound("step %d has no rollout %d of query %q in %s", d.Step, k, q, rollout.RolloutsFile)
		} else {
			p.Rec, err = readRecord(sf.rollouts, lines[0])
		}
	}
	if err == nil {
		p.Step.Question, p.Step.Gold = p.Rec.Question, p.Rec.GoldAnswer
		p.Step.PrevURL, p.Step.NextURL = neighbours(d.Step, stats, q, k)
		for _, qs := range stats {
			if qs.QueryID == q && k < len(qs.MainRewards) {
				p.Row = queryRowOf(sf, qs).Rollouts[k]
			}
		}
		for _, n := range sf.executor.byRollout[rolloutKey(q, k)] {
			p.Entries = append(p.Entries, sf.executor.samples[n])
		}
		if p.Rec.Tree != nil {
			pv := trajectoryView(p.Rec.Tree.Planner, "planner", "planner")
			if len(p.Rec.Drifts) > 0 {
				pv.Drifts = p.Rec.Drifts[0]
			}
			p.Trajs = append(p.Trajs, pv)
			for i, e := range p.Rec.Tree.Executors {
				ev := trajectoryView(e, "executor-"+strconv.Itoa(i), "executor "+strconv.Itoa(i))
				if i+1 < len(p.Rec.Drifts) {
					ev.Drifts = p.Rec.Drifts[i+1]
				}
				if i < len(p.Rec.Scores.Subs) {
					ev.Sub = &p.Rec.Scores.Subs[i]
				}
				for _, n := range sf.executor.byRollout[rolloutKey(q, k)] {
					m := sf.executor.samples[n]
					if m.DuplicateOf == nil && m.SubIndex != nil && *m.SubIndex == i {
						ev.Samples = append(ev.Samples, m)
					}
				}
				p.Trajs = append(p.Trajs, ev)
			}
		}
	}
	h.render(w, r, "rollout", fmt.Sprintf("step %d query %s rollout %d", d.Step, q, k), p, err)
}

// neighbours returns the links of the rollouts before and after rollout k
// of query q in the step's order (queries as stats.jsonl lists them, each
// query's rollouts by k), "" at either end.
func neighbours(step int, stats []rollout.QueryStats, q string, k int) (prev, next string) {
	type ref struct {
		q string
		k int
	}
	var order []ref
	at := -1
	for _, qs := range stats {
		for kk := range qs.MainRewards {
			if qs.QueryID == q && kk == k {
				at = len(order)
			}
			order = append(order, ref{qs.QueryID, kk})
		}
	}
	link := func(r ref) string { return fmt.Sprintf("/step/%d/query/%s/rollout/%d", step, url.PathEscape(r.q), r.k) }
	if at > 0 {
		prev = link(order[at-1])
	}
	if at >= 0 && at+1 < len(order) {
		next = link(order[at+1])
	}
	return prev, next
}
