package view

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
)

// Detokenizer turns token ids back into text with the tokenizer of the
// model that produced them: the sim's tokenizer in process, or an
// engine's /detokenize route.
type Detokenizer interface {
	Detokenize(ctx context.Context, ids []int) (string, error)
}

// detokenizeTimeout bounds the detokenizer's calls of one token page, so
// that a dead engine costs a page a few seconds, never its minute.
const detokenizeTimeout = 5 * time.Second

// Span sources, as the token view labels them.
const (
	// SourceTokenizer is text decoded by the Detokenizer, verified against
	// what the farm kept where it kept that span's text.
	SourceTokenizer = "tokenizer"
	// SourceKept is the text the farm kept for the turn (the message, its
	// tool calls, the tool observations), aligned to the span by order.
	SourceKept = "kept"
)

// tokenSpan is a maximal run of tokens with the same loss mask: a turn's
// completion (mask 1) or the prompt, tool observations and template text
// between completions (mask 0).
type tokenSpan struct {
	N          int
	Mask       int8
	From, To   int
	Label      string
	Text       string
	Source     string
	Tokens     []tokenCell
	FirstShown bool
}

// spansOf splits mask into maximal runs of equal values.
func spansOf(mask []int8) []tokenSpan {
	var out []tokenSpan
	for i := 0; i < len(mask); {
		j := i + 1
		for j < len(mask) && mask[j] == mask[i] {
			j++
		}
		out = append(out, tokenSpan{N: len(out), Mask: mask[i], From: i, To: j})
		i = j
	}
	return out
}

// generatedSpans counts the runs of mask 1.
func generatedSpans(mask []int8) int {
	n := 0
	for _, s := range spansOf(mask) {
		if s.Mask == 1 {
			n++
		}
	}
	return n
}

// keptText is what the farm kept of one trajectory, turn by turn.
type keptText struct {
	task  string
	turns []string // each turn's completion: reasoning, content, calls
	obs   []string // the observations the turn's calls returned
}

// keptOf collects the kept text of a trajectory of the tree.
func keptOf(t *rollout.TrajectoryRecord) *keptText {
	if t == nil {
		return nil
	}
	k := &keptText{task: t.Task}
	for i := range max(len(t.Turns), len(t.Steps)) {
		var b strings.Builder
		if i < len(t.Turns) && t.Turns[i] != nil {
			m := t.Turns[i].Message
			if m.ReasoningContent != "" {
				b.WriteString("<think>" + m.ReasoningContent + "</think>\n")
			}
			b.WriteString(m.Content)
			for _, c := range t.Turns[i].ToolCalls {
				b.WriteString("\n<tool_call>" + c.Function.Name + " " + compactJSON(json.RawMessage(c.Function.Arguments)) + "</tool_call>")
			}
		}
		var obs []string
		if i < len(t.Steps) {
			for _, c := range t.Steps[i].Calls {
				obs = append(obs, c.Name+" → "+c.Observation)
			}
		}
		k.turns, k.obs = append(k.turns, b.String()), append(k.obs, strings.Join(obs, "\n"))
	}
	return k
}

// firstWords returns the start of the turn's message as the model wrote
// it, to recognise it in decoded text.
func firstWords(t *rollout.TrajectoryRecord, turn int) string {
	if t == nil || turn >= len(t.Turns) || t.Turns[turn] == nil {
		return ""
	}
	s := t.Turns[turn].Message.ReasoningContent
	if s == "" {
		s = t.Turns[turn].Message.Content
	}
	s = strings.TrimSpace(s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// labelSpans gives each span of a sample its text. turn0 is the
// trajectory's turn of the sample's first completion (a part after a
// drift split continues a trajectory). With a detokenizer every span is
// decoded, and kept only when the first completion's decoded text holds
// what the farm kept of that turn (else the tokenizer is not the model's);
// without one, or when it does not match, completions get their turn's
// kept text and the spans after them the turn's tool observations.
// atStart says spans[0] is the sample's first span (its prompt).
func labelSpans(ctx context.Context, spans []tokenSpan, ids []int, traj *rollout.TrajectoryRecord, turn0 int, atStart bool, det Detokenizer) (note string) {
	kept := keptOf(traj)
	if det != nil {
		ctx, cancel := context.WithTimeout(ctx, detokenizeTimeout)
		defer cancel()
		texts := make([]string, len(spans))
		ok, checked := true, false
		for i, s := range spans {
			text, err := det.Detokenize(ctx, ids[s.From:s.To])
			if err != nil {
				note, ok = "the tokenizer failed ("+err.Error()+"): showing the text the farm kept", false
				break
			}
			texts[i] = text
			if s.Mask == 1 && !checked {
				checked = true
				if w := firstWords(traj, turn0); w != "" && !strings.Contains(text, w) {
					note, ok = "the tokenizer's text is not what the farm kept for this turn (another model's tokenizer?): showing the kept text", false
					break
				}
			}
		}
		if ok {
			for i := range spans {
				spans[i].Text, spans[i].Source = texts[i], SourceTokenizer
				spans[i].Label = spanLabel(spans[i], i)
			}
			return ""
		}
	}
	if kept == nil {
		if note == "" {
			note = "no tokenizer and no kept text for this sample: token ids only"
		}
		return note
	}
	turn := turn0
	for i := range spans {
		s := &spans[i]
		s.Source = SourceKept
		switch {
		case s.Mask == 1:
			if turn < len(kept.turns) {
				s.Text = kept.turns[turn]
			}
			s.Label = "turn " + strconv.Itoa(turn+1) + " (completion)"
			turn++
		case i == 0 && atStart && turn0 == 0:
			s.Text, s.Label = kept.task, "prompt (the task; the template's text around it is not kept)"
		case i == 0 && atStart:
			s.Label = "prompt (the earlier turns, re-rendered by the chat template after a drift split)"
		case turn >= 1 && turn-1 < len(kept.obs):
			s.Text, s.Label = kept.obs[turn-1], "tool observations of turn "+strconv.Itoa(turn)
		}
	}
	return note
}

// spanLabel names a decoded span by its mask.
func spanLabel(s tokenSpan, i int) string {
	if s.Mask == 1 {
		return "generated"
	}
	if i == 0 {
		return "prompt"
	}
	return "prompt / tool text"
}
