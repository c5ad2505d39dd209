package trainer

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Toy is a small Policy for tests and demonstrations: a bigram softmax
// over Vocab buckets (token t is bucket t mod Vocab). Its parameters are a
// Vocab×Vocab table of logits, row a holding the logits of the token after
// one of bucket a, so every logprob and its gradient is exact and cheap.
// Position 0 depends on no parameter (its logprob is 0).
type Toy struct {
	// Vocab is the number of buckets (at least 2).
	Vocab int
	// BaseModels, when set, are the only base models Initial accepts.
	BaseModels []string
	// MaxToken, when positive, makes masked token ids ≥ MaxToken
	// unmatched: tokens the policy cannot produce.
	MaxToken int
	// Tagged reads a sequence's first token as its group ("g" and the
	// token) and its second as its main reward (the token's value), so
	// tests can check advantage ordering.
	Tagged bool
}

var (
	_ Policy  = Toy{}
	_ Sampler = Toy{}
)

// ToyMaxSample is how many tokens Toy.Sample draws when not told: the
// bigram never ends a turn itself.
const ToyMaxSample = 16

// Initial returns small logits drawn deterministically from baseModel's
// name.
func (p Toy) Initial(baseModel string) ([]float64, error) {
	if p.Vocab < 2 {
		return nil, fmt.Errorf("toy policy: vocab %d: want at least 2", p.Vocab)
	}
	if len(p.BaseModels) > 0 && !slices.Contains(p.BaseModels, baseModel) {
		return nil, fmt.Errorf("toy policy: unknown base model %q", baseModel)
	}
	h := fnv.New64a()
	h.Write([]byte(baseModel))
	x := h.Sum64() | 1
	params := make([]float64, p.Vocab*p.Vocab)
	for i := range params {
		// xorshift: reproducible values in [-0.5, 0.5).
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		params[i] = float64(x>>11)/float64(1<<53) - 0.5
	}
	return params, nil
}

// Score returns the bigram logprob of every masked position after the
// first, and its gradient with respect to the row of logits it used.
func (p Toy) Score(params []float64, seq []int, mask []bool) (Scored, error) {
	v := p.Vocab
	if len(params) != v*v {
		return Scored{}, fmt.Errorf("toy policy: %d parameters, want %d", len(params), v*v)
	}
	if len(mask) != len(seq) {
		return Scored{}, fmt.Errorf("toy policy: mask of %d for %d tokens", len(mask), len(seq))
	}
	sc := Scored{Logprobs: make([]float64, len(seq)), Grads: map[int][]float64{}}
	if p.Tagged && len(seq) >= 2 {
		sc.Group, sc.Reward, sc.RewardKnown = "g"+strconv.Itoa(seq[0]), float64(seq[1]), true
	}
	for pos := 1; pos < len(seq); pos++ {
		if !mask[pos] {
			continue
		}
		if p.MaxToken > 0 && seq[pos] >= p.MaxToken {
			sc.Unmatched = append(sc.Unmatched, Unmatched{Start: pos, End: pos + 1, Reason: fmt.Sprintf("token %d outside the toy vocabulary", seq[pos])})
			continue
		}
		a, b := seq[pos-1]%v, seq[pos]%v
		row := params[a*v : (a+1)*v]
		top := slices.Max(row)
		z := 0.0
		for _, l := range row {
			z += math.Exp(l - top)
		}
		lse := top + math.Log(z)
		sc.Logprobs[pos] = row[b] - lse
		g := make([]float64, len(params))
		for k, l := range row {
			g[a*v+k] = -math.Exp(l - lse)
		}
		g[a*v+b]++
		sc.Grads[pos] = g
	}
	return sc, nil
}

// Save writes {"vocab": V, "params": […]} to path, through a temporary
// file renamed into place.
func (p Toy) Save(params []float64, path string) error {
	b, err := json.Marshal(map[string]any{"vocab": p.Vocab, "params": params})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".save-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Sample draws up to maxTokens (ToyMaxSample when not positive) tokens
// of the buckets 0…Vocab-1 from the bigram after prompt's last token,
// each from the row's softmax at temperature; the logprobs are Score's.
// It never ends a turn itself.
func (p Toy) Sample(params []float64, prompt []int, maxTokens int, temperature float64, rng *rand.Rand) ([]int, []float64, bool, error) {
	v := p.Vocab
	if len(params) != v*v {
		return nil, nil, false, fmt.Errorf("toy policy: %d parameters, want %d", len(params), v*v)
	}
	if len(prompt) == 0 {
		return nil, nil, false, fmt.Errorf("toy policy: empty prompt")
	}
	if maxTokens <= 0 {
		maxTokens = ToyMaxSample
	}
	last := prompt[len(prompt)-1]
	var tokens []int
	var lps []float64
	for range maxTokens {
		row := params[(last%v)*v : (last%v+1)*v]
		top := slices.Max(row)
		z := 0.0
		for _, l := range row {
			z += math.Exp(l - top)
		}
		lse := top + math.Log(z)
		b := slices.Index(row, top)
		if temperature > 0 && rng != nil {
			w := make([]float64, v)
			sum := 0.0
			for k, l := range row {
				w[k] = math.Exp((l - top) / temperature)
				sum += w[k]
			}
			u := rng.Float64() * sum
			for b = 0; b < v-1 && u >= w[b]; b++ {
				u -= w[b]
			}
		}
		tokens = append(tokens, b)
		lps = append(lps, row[b]-lse)
		last = b
	}
	return tokens, lps, false, nil
}

// PromptLogprobs is Score's logprob of every prompt token after the first.
func (p Toy) PromptLogprobs(params []float64, prompt []int) ([]float64, error) {
	mask := make([]bool, len(prompt))
	for i := 1; i < len(mask); i++ {
		mask[i] = true
	}
	sc, err := p.Score(params, prompt, mask)
	return sc.Logprobs, err
}

// Decode writes the token ids, separated by spaces.
func (p Toy) Decode(tokens []int) (string, error) {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = strconv.Itoa(t)
	}
	return strings.Join(parts, " "), nil
}

// Load reads a file Save wrote.
func (p Toy) Load(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Params []float64 `json:"params"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("toy policy: %s: %w", path, err)
	}
	return f.Params, nil
}
