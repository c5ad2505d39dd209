package evalrun

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/bench/score"
)

// PairSeed derives the agent seed of run run of item id from the eval seed: the 64-bit FNV-1a hash of
// the seed, the id and the run, shifted to a non-negative int64. It is stable across releases, so a
// resumed eval samples its remaining pairs as the uninterrupted one would have.
func PairSeed(seed uint64, id string, run int) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(run)))
	return int64(h.Sum64() >> 1)
}

// PairKey is the agents.Query key of run run of item id: "eval/<id>/<run>". It prefixes the endpoint
// stickiness keys of the pair's trajectories and carries no question text.
func PairKey(id string, run int) string {
	return "eval/" + id + "/" + strconv.Itoa(run)
}

// pair is one (item, run) to evaluate.
type pair struct {
	item bench.Item
	run  int
}

// evaluate runs the agent on one pair and scores its answer. abandoned reports that ctx ended
// before the pair did: its result is then incomplete and must not be recorded.
func evaluate(ctx context.Context, cfg Config, p pair) (res bench.Result, abandoned bool) {
	res = bench.ResultFor(p.item, p.run)
	if res.Benchmark == "" {
		res.Benchmark = cfg.Benchmark
	}
	start := time.Now()
	r := cfg.Agent.Run(ctx, agents.Query{Key: PairKey(p.item.ID, p.run), Question: p.item.Question, Seed: PairSeed(cfg.Seed, p.item.ID, p.run)})
	res.LatencySeconds = time.Since(start).Seconds()
	if ctx.Err() != nil {
		return res, true
	}
	fillStats(&res, r)
	switch {
	case r == nil || r.Planner == nil:
		res.Error = "agent returned no rollout"
	case r.Planner.Error != "":
		res.Error = r.Planner.Error
	default:
		res.Prediction = r.Answer
		v, err := cfg.Scorer.Score(score.WithCaseKey(ctx, PairKey(p.item.ID, p.run)), score.Case{Question: p.item.Question, Answer: p.item.Answer, Prediction: r.Answer})
		if ctx.Err() != nil {
			return res, true
		}
		res.Correct, res.Method, res.JudgeOutput = v.Correct, v.Method, v.JudgeOutput
		if err != nil {
			res.Correct = false
			res.JudgeError = err.Error()
		}
	}
	if p.item.Sensitive {
		Redact(&res, p.item)
	}
	return res, false
}

// fillStats copies the rollout's counters into res: turns and tool calls of every trajectory
// (delegate and reason calls included, as in the rollout summaries), delegations as the number of
// executor trajectories, and prompt and completion tokens summed over every turn.
func fillStats(res *bench.Result, r *agents.Rollout) {
	if r == nil {
		return
	}
	res.Delegations = len(r.Executors)
	for _, t := range append([]*agents.Trajectory{r.Planner}, r.Executors...) {
		if t == nil {
			continue
		}
		res.Turns += len(t.Turns)
		res.ToolCalls += t.NumCalls()
		for _, turn := range t.Turns {
			if turn == nil {
				continue
			}
			res.PromptTokens += turn.Usage.PromptTokens
			res.CompletionTokens += turn.Usage.CompletionTokens
		}
	}
}

// Redacted replaces text removed from an error message of a sensitive item.
const Redacted = "[redacted]"

// HashText returns the form a sensitive text is stored in: "sha256:" and the first 16 hex digits of
// the SHA-256 of text.
func HashText(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// Redact strips from the result of a sensitive item everything that could reveal its question or
// reference answer, keeping what the metrics need:
//
//   - the prediction (the model's answer, which restates the reference answer whenever it is right)
//     is replaced by HashText(report.VoteKey(prediction)), so equal predictions still vote together in
//     the majority vote and two evals can still be compared, but nothing can be rescored later;
//   - every raw judge reply is replaced by its HashText (the xbench judge quotes the answer);
//   - the agent and judge error messages keep their text with every occurrence of the question and
//     the answer replaced by Redacted.
//
// ID, Hash and the counters are kept. An empty prediction stays empty.
func Redact(res *bench.Result, it bench.Item) {
	if res.Prediction != "" {
		res.Prediction = HashText(report.VoteKey(res.Prediction))
	}
	if res.JudgeOutput != nil {
		hashed := make([]string, len(res.JudgeOutput))
		for i, raw := range res.JudgeOutput {
			hashed[i] = HashText(raw)
		}
		res.JudgeOutput = hashed
	}
	res.Error = scrub(res.Error, it)
	res.JudgeError = scrub(res.JudgeError, it)
}

// scrub removes the item's question and answer from s, longest first so that an answer inside the
// question does not leave the rest of the question behind.
func scrub(s string, it bench.Item) string {
	texts := []string{it.Question, it.Answer}
	if len(texts[1]) > len(texts[0]) {
		texts[0], texts[1] = texts[1], texts[0]
	}
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			s = strings.ReplaceAll(s, t, Redacted)
		}
	}
	return s
}
