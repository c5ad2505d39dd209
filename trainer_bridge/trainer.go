// Package trainerbridge hands a step's samples of one role to that role's
// trainer and brings the new weights back to the inference servers.
//
// A Trainer is one role's trainer (the planner's or the executors'): the
// paper trains the two as distinct models on distinct trainers, so a run
// holds two Trainers and no gradient crosses between them. Backends are
// chosen by URL scheme with Open:
//
//   - tinker+http://HOST, tinker+https://HOST: a Tinker-compatible REST
//     service (Thinking Machines' API, SkyRL's open-source server);
//   - http://HOST, https://HOST: the generic batch API of
//     docs/trainer-api.md, for users who wrap their own trainer;
//   - file://DIR: writes each step's samples and a manifest for offline
//     training.
//
// The package takes samples from the pure M-GRPO layer (package rollout)
// and imports nothing of the agents, the tools or the model client.
package trainerbridge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"

	"github.com/mgrpo/mgrpo/rollout"
)

// Errors every backend returns (wrapped) for the same conditions.
var (
	// ErrRejected: the trainer refused the batch or the configuration (a
	// 4xx, an error body); retrying the same request cannot help. The
	// error's text carries the trainer's message.
	ErrRejected = errors.New("trainer rejected the request")
	// ErrUnavailable: the trainer could not be reached or kept failing
	// (5xx, timeouts) after the backend's retries.
	ErrUnavailable = errors.New("trainer unavailable")
	// ErrUnknownModel: the trainer does not serve the base model asked for.
	ErrUnknownModel = errors.New("base model not served by the trainer")
)

// Loss names the policy-gradient loss the trainer applies.
type Loss string

// The losses. Both take the sampler's logprobs and the advantages per
// target token.
const (
	// LossImportanceSampling weights the policy gradient by the ratio of
	// the trainer's to the sampler's probability (the default).
	LossImportanceSampling Loss = "importance_sampling"
	// LossPPO clips that ratio to [1-ClipLow, 1+ClipHigh].
	LossPPO Loss = "ppo"
)

// Options configures one role's trainer. Backends ignore what they have no
// use for (the files backend trains nothing).
type Options struct {
	// Run names the run; Role is the role this trainer trains.
	Run  string
	Role rollout.Role
	// BaseModel is the model the trainer starts from (a Hugging Face name).
	BaseModel string
	// LoRARank is the rank of the LoRA adapter trained (0: the backend's
	// default).
	LoRARank int
	// Seed seeds the trainer's initialisation where it takes one.
	Seed int64
	// Loss is the loss (empty: LossImportanceSampling); ClipLow and
	// ClipHigh are PPO's clip thresholds as offsets from 1 (0: 0.2 each).
	Loss              Loss
	ClipLow, ClipHigh float64
	// Adam's parameters; zero values take the backend's defaults
	// (DefaultAdam).
	Adam AdamParams
	// Temperature is the sampling temperature of the role's samples (0:
	// 1). A trainer that computes the logprobs of its importance ratios
	// and checks itself must divide its logits by it, or it compares the
	// model at temperature 1 with tokens drawn at another. The generic
	// HTTP API and the files backend send it; Tinker's API has no field
	// for it (its built-in losses score at temperature 1).
	Temperature float64
	// APIKeyEnv names the environment variable holding the trainer's API
	// key (empty: the backend's default, e.g. TINKER_API_KEY). The key is
	// never logged or written.
	APIKeyEnv string
}

// WireTemperature returns o.Temperature as the generic API and the files
// backend send it: 0 (left out of the JSON) when it is 1 or not positive,
// so that bodies and manifests of on-policy runs are what they were before
// the field existed, and a service that reads no temperature keeps working
// for them.
func (o Options) WireTemperature() float64 {
	if o.Temperature > 0 && o.Temperature != 1 {
		return o.Temperature
	}
	return 0
}

// AdamParams are the optimizer's parameters for one step.
type AdamParams struct {
	LearningRate float64 `json:"learning_rate"`
	Beta1        float64 `json:"beta1"`
	Beta2        float64 `json:"beta2"`
	Eps          float64 `json:"eps"`
	WeightDecay  float64 `json:"weight_decay"`
	// GradClipNorm clips the gradient's global norm (0: no clipping).
	GradClipNorm float64 `json:"grad_clip_norm"`
}

// DefaultAdam are the parameters used for the zero fields of
// Options.Adam.
var DefaultAdam = AdamParams{LearningRate: 1e-5, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}

// WithDefaults returns p with its zero fields (except WeightDecay and
// GradClipNorm, for which 0 is meaningful) taken from DefaultAdam.
func (p AdamParams) WithDefaults() AdamParams {
	if p.LearningRate == 0 {
		p.LearningRate = DefaultAdam.LearningRate
	}
	if p.Beta1 == 0 {
		p.Beta1 = DefaultAdam.Beta1
	}
	if p.Beta2 == 0 {
		p.Beta2 = DefaultAdam.Beta2
	}
	if p.Eps == 0 {
		p.Eps = DefaultAdam.Eps
	}
	return p
}

// Batch is one step's samples of one role: what one optimizer step trains
// on. Samples are read-only (they may share token slices).
type Batch struct {
	Run  string
	Role rollout.Role
	Step int
	// PolicyVersion is the trainer's current version, which the step
	// trains on top of: the version that sampled the batch, or in
	// asynchronous training (max staleness S) one up to S newer. The
	// trained weights are PolicyVersion+1 unless the trainer says
	// otherwise.
	PolicyVersion int64
	Samples       []rollout.Sample
}

// IdempotencyKey identifies the batch to the trainer, so a step retried
// after a crash or a lost answer is trained once: the same run, role and
// step always give the same key.
func (b Batch) IdempotencyKey() string {
	return fmt.Sprintf("%s/%s/step-%06d", b.Run, b.Role, b.Step)
}

// StepResult is what one trained step yields.
type StepResult struct {
	// Weights references the new weights as the trainer names them (a
	// tinker:// path, a directory, a URL); weight sync maps it to what the
	// inference servers load. Empty when the backend trains nothing.
	Weights string
	// Version is the policy version of the new weights.
	Version int64
	// Metrics are what the trainer reported (loss, KL, clip fraction, …),
	// by the trainer's names.
	Metrics map[string]float64
}

// Trainer trains one role. Its methods are called from one goroutine at a
// time.
type Trainer interface {
	// Start prepares the trainer before any rollout: it checks the base
	// model is served and creates (or resumes) the trained model. A base
	// model the trainer does not serve is ErrUnknownModel.
	Start(ctx context.Context) error
	// Train runs one optimizer step on b and saves weights for sampling.
	// Calling it again with the same batch (after a crash or a lost
	// answer) must not train it twice.
	Train(ctx context.Context, b Batch) (StepResult, error)
	// Close ends the trainer's session and releases its connections.
	Close() error
}

// Backend opens a Trainer for a URL of its scheme.
type Backend func(ctx context.Context, u *url.URL, o Options) (Trainer, error)

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{}
)

// Register makes a backend available to Open under scheme. It panics when
// the scheme is taken (a programming error).
func Register(scheme string, b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if _, dup := backends[scheme]; dup {
		panic("trainerbridge: backend registered twice for scheme " + scheme)
	}
	backends[scheme] = b
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	out := make([]string, 0, len(backends))
	for s := range backends {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Open returns the Trainer for rawURL, chosen by its scheme. The error
// names the URL with any password redacted.
func Open(ctx context.Context, rawURL string, o Options) (Trainer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("trainer URL: %w", err)
	}
	backendsMu.RLock()
	b, ok := backends[u.Scheme]
	backendsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("trainer URL %s: unknown scheme %q (want one of %v)", u.Redacted(), u.Scheme, Schemes())
	}
	t, err := b(ctx, u, o)
	if err != nil {
		return nil, fmt.Errorf("trainer %s: %w", u.Redacted(), err)
	}
	return t, nil
}

// Resumer is implemented by backends that keep state on the trainer's side
// (a session, a model, request sequence numbers) which a restarted process
// must pick up to avoid training a batch twice. The training loop stores
// ResumeState's bytes with every completed step, in the same write that
// marks the step done, and hands them to Resume after a restart, before
// Start.
type Resumer interface {
	// ResumeState returns the state to keep, as JSON. It changes on Start
	// and on every successful Train.
	ResumeState() ([]byte, error)
	// Resume restores a state ResumeState returned. It must be called
	// before Start; bytes that do not parse are an error.
	Resume(state []byte) error
}
