package score

import (
	"context"

	"github.com/mgrpo/mgrpo/agents/replay"
)

// Recorded returns m with its answers recorded (--record), keyed by the
// case (CaseKey), model and prompts.
func Recorded(r *replay.Recorder, m ChatModel, model string) ChatModel {
	return recordedJudge{r: r, m: m, model: model}
}

// Played returns a judge that answers as the recorded one did (mgrpo
// replay).
func Played(p *replay.Player, model string) ChatModel { return playedJudge{p: p, model: model} }

// recordedJudge records a judge's answers.
type recordedJudge struct {
	r     *replay.Recorder
	m     ChatModel
	model string
}

func (j recordedJudge) Complete(ctx context.Context, system, user string) (string, error) {
	return j.r.TextAt(ctx, "judge", CaseKey(ctx), []string{j.model, system, user}, func() (string, error) { return j.m.Complete(ctx, system, user) })
}

// playedJudge answers as the recorded judge did.
type playedJudge struct {
	p     *replay.Player
	model string
}

func (j playedJudge) Complete(ctx context.Context, system, user string) (string, error) {
	return j.p.TextAt(ctx, "judge", CaseKey(ctx), []string{j.model, system, user})
}
