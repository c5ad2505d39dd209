package view

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mgrpo/mgrpo/rollout"
)

// tokenCell is one token of the token view.
type tokenCell struct {
	Pos     int
	ID      int
	Mask    int8
	Logprob float64
	// Class colours the token: "p" for a prompt token (mask 0), "g0" to
	// "g4" for a generated one by the sampler's probability, from likely
	// (≥ 0.9) to unlikely (< 0.01).
	Class string
	// Text is the token's own text (an in-process tokenizer), shown with
	// visible whitespace; "" shows the id.
	Text string
}

// shownText makes a token's whitespace visible.
func shownText(s string) string {
	return strings.NewReplacer("\n", "↵", "\t", "→").Replace(s)
}

// logprobClass buckets a generated token's sampler logprob.
func logprobClass(lp float64) string {
	p := math.Exp(lp)
	switch {
	case p >= 0.9:
		return "g0"
	case p >= 0.5:
		return "g1"
	case p >= 0.1:
		return "g2"
	case p >= 0.01:
		return "g3"
	default:
		return "g4"
	}
}

// samplePage is the token view's data.
type samplePage struct {
	Step   stepData
	Role   string
	Meta   sampleMeta
	Sample rollout.Sample
	Tokens []tokenCell
	Pager  pager
	// Generated counts loss-mask-1 tokens; MeanLogprob is their mean
	// sampler logprob.
	Generated   int
	MeanLogprob float64
	// PrevPart and NextPart are the line numbers of the neighbouring parts
	// of a trajectory split by drift, -1 when there is none.
	PrevPart, NextPart int
	// First and Last report whether this page shows the sample's first or
	// last token, where the drift boundaries are marked.
	First, Last bool
	// Spans are the page's tokens by span, each with its text; TextNote
	// says why the text is not the tokenizer's, when it is not.
	Spans    []tokenSpan
	TextNote string
}

func (h *Handler) serveSample(w http.ResponseWriter, r *http.Request) {
	d, _, sf, err := h.stepBase(r)
	role := r.PathValue("role")
	line, lerr := strconv.Atoi(r.PathValue("line"))
	p := samplePage{Role: role, PrevPart: -1, NextPart: -1}
	var ix *fileIndex
	switch {
	case err != nil:
	case d.Writing:
		err = notFound("step %d is in progress: its files are being written", d.Step)
	case role == string(rollout.RolePlanner):
		ix = sf.planner
	case role == string(rollout.RoleExecutor):
		ix = sf.executor
	default:
		err = notFound("role %q: want planner or executor", role)
	}
	if err == nil && (lerr != nil || line < 0 || line >= len(ix.samples)) {
		err = notFound("step %d has no %s sample %q (%d samples, numbered from 0)", d.Step, role, r.PathValue("line"), len(ix.samples))
	}
	var raw []byte
	if err == nil {
		raw, err = ix.readLine(line)
	}
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(&p.Sample); derr != nil {
			err = fmt.Errorf("read %s line %d: %w", ix.path, line+1, derr)
		}
	}
	if err == nil {
		p.Step, p.Meta = d, ix.samples[line]
		p.Step.QueryID = p.Meta.QueryID
		if p.Meta.Part > 1 {
			p.PrevPart = line - 1
		}
		if p.Meta.Part < p.Meta.Parts {
			p.NextPart = line + 1
		}
		s := &p.Sample
		var sum float64
		for i, m := range s.LossMask {
			if m == 1 && i < len(s.Logprobs) {
				p.Generated++
				sum += s.Logprobs[i]
			}
		}
		if p.Generated > 0 {
			p.MeanLogprob = sum / float64(p.Generated)
		}
		base := fmt.Sprintf("/step/%d/sample/%s/%d", d.Step, role, line)
		p.Pager = paginate(r, base, len(s.InputIDs), tokensPerPage)
		p.First, p.Last = p.Pager.Page == 1, p.Pager.Page == p.Pager.Pages
		for i := p.Pager.From; i < p.Pager.To; i++ {
			c := tokenCell{Pos: i, ID: s.InputIDs[i], Class: "p"}
			if i < len(s.LossMask) {
				c.Mask = s.LossMask[i]
			}
			if i < len(s.Logprobs) {
				c.Logprob = s.Logprobs[i]
			}
			if c.Mask == 1 {
				c.Class = logprobClass(c.Logprob)
			}
			p.Tokens = append(p.Tokens, c)
		}
		p.Spans, p.TextNote = h.tokenSpans(r.Context(), ix, sf, &p)
	}
	h.render(w, r, "sample", fmt.Sprintf("step %d %s sample %d", d.Step, role, line), p, err)
}

// tokenSpans groups the page's tokens by span and gives each span its
// text: the detokenizer's, or what the farm kept for the trajectory's
// turns (read from rollouts.jsonl).
func (h *Handler) tokenSpans(ctx context.Context, ix *fileIndex, sf stepFiles, p *samplePage) ([]tokenSpan, string) {
	s := &p.Sample
	mask := s.LossMask
	if len(mask) != len(s.InputIDs) {
		mask = make([]int8, len(s.InputIDs))
		copy(mask, s.LossMask)
	}
	spans := spansOf(mask)
	traj, turn0 := h.trajectoryOf(ix, sf, p.Meta)
	// Only the spans this page shows are labelled (a detokenizer call
	// each), then cut to the page.
	var shown []tokenSpan
	for _, sp := range spans {
		if sp.To > p.Pager.From && sp.From < p.Pager.To {
			shown = append(shown, sp)
		}
	}
	// A page after the first starts mid-trajectory: its first completion
	// is preceded by those of earlier pages.
	for _, sp := range spans {
		if sp.Mask == 1 && sp.To <= p.Pager.From {
			turn0++
		}
	}
	note := labelSpans(ctx, shown, s.InputIDs, traj, turn0, p.Pager.From == 0, h.det)
	for i := range shown {
		sp := &shown[i]
		sp.FirstShown = sp.From >= p.Pager.From
		for _, c := range p.Tokens {
			if c.Pos >= sp.From && c.Pos < sp.To {
				if h.perToken && sp.Source == SourceTokenizer {
					if t, err := h.det.Detokenize(ctx, []int{c.ID}); err == nil {
						c.Text = shownText(t)
					}
				}
				sp.Tokens = append(sp.Tokens, c)
			}
		}
	}
	return shown, note
}

// trajectoryOf finds the sample's trajectory in the rollout's tree (the
// original's for a duplicated or borrowed executor entry) and the turn
// its first completion is, counting the completions of earlier parts of a
// trajectory split by drift. It returns nil when rollouts.jsonl does not
// hold it.
func (h *Handler) trajectoryOf(ix *fileIndex, sf stepFiles, m sampleMeta) (*rollout.TrajectoryRecord, int) {
	k, sub := m.Rollout, m.SubIndex
	if m.DuplicateOf != nil {
		k, sub = m.DuplicateOf.Rollout, &m.DuplicateOf.SubIndex
	}
	lines := sf.rollouts.byRollout[rolloutKey(m.QueryID, k)]
	if len(lines) == 0 {
		return nil, 0
	}
	rec, err := readRecord(sf.rollouts, lines[0])
	if err != nil || rec.Tree == nil {
		return nil, 0
	}
	var traj *rollout.TrajectoryRecord
	switch {
	case m.Role == string(rollout.RoleExecutor) && sub != nil && *sub >= 0 && *sub < len(rec.Tree.Executors):
		traj = rec.Tree.Executors[*sub]
	case m.Role != string(rollout.RoleExecutor):
		traj = rec.Tree.Planner
	}
	turn0 := 0
	for part := 1; part < m.Part; part++ {
		raw, err := ix.readLine(m.Line - m.Part + part)
		if err != nil {
			break
		}
		var prev struct {
			LossMask []int8 `json:"loss_mask"`
		}
		if json.Unmarshal(raw, &prev) == nil {
			turn0 += generatedSpans(prev.LossMask)
		}
	}
	return traj, turn0
}
