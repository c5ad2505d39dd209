package trainer

import (
	"log/slog"
	"time"
)

// Defaults applied by New when a Config field is zero.
const (
	// DefaultSessionTTL is how long a session lives after its last
	// heartbeat (the SDK beats every 10 s).
	DefaultSessionTTL = 2 * time.Minute
	// DefaultKeptSteps is how many of a model's latest steps (each ended by
	// save_weights_for_sampler) keep their futures for replays.
	DefaultKeptSteps = 4
	// DefaultPollTimeout is how long retrieve_future holds a request for an
	// unfinished future before answering 408 or try_again; it stays below
	// the SDK's 45 s client timeout.
	DefaultPollTimeout = 30 * time.Second
	// DefaultMaxBodyBytes caps request bodies; larger ones get 413.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultRetryAfter is the Retry-After of injected 429s.
	DefaultRetryAfter = time.Second
	// DefaultChunkDatums and DefaultChunkBytes are the forward_backward
	// limits client/config announces: the SDK's defaults.
	DefaultChunkDatums = 1024
	DefaultChunkBytes  = 5_000_000
	// DefaultKeptSamples is how many sampling futures are kept.
	DefaultKeptSamples = 1024
)

// Faults sets the rate of each injected failure. Every request draws one
// uniform number from the server's seeded fault RNG and fails in at most one
// of the first four ways, so those rates must sum to at most 1; every new
// request of create_model and the sequenced routes draws again, when it is
// accepted, against RateFutureExpire. Zero everywhere (the default) injects nothing.
type Faults struct {
	// Rate500 and Rate503 answer 500 and 503 with a {"detail": …} body,
	// before the request is looked at.
	Rate500, Rate503 float64
	// Rate429 answers 429 with Retry-After: RetryAfter (whole seconds,
	// rounded up).
	Rate429 float64
	// RateDrop serves the request, then writes the answer's head and half
	// its body and closes the connection: the request took effect and the
	// client cannot know.
	RateDrop float64
	// RateFutureExpire makes a new request's future expire once: the
	// request is queued and runs, but the first retrieve_future of it
	// answers 410, and the client must send it again with the same body
	// and seq_id (which answers the same future). The SDK does so for a
	// 410, so it survives this fault where it would not survive a failed
	// future that wants a resend.
	RateFutureExpire float64
	// RetryAfter is the Retry-After of injected 429s (DefaultRetryAfter).
	RetryAfter time.Duration
}

func (f Faults) submitTotal() float64 { return f.Rate500 + f.Rate503 + f.Rate429 + f.RateDrop }

// PollAnswer is what retrieve_future answers when its long poll runs out.
type PollAnswer int

// The poll answers.
const (
	// Poll408 answers 408 {"detail": …}, as SkyRL's server does.
	Poll408 PollAnswer = iota
	// PollTryAgain answers 200 {"type": "try_again", request_id,
	// queue_state}, the SDK's TryAgainResponse.
	PollTryAgain
)

// Config configures a Server.
type Config struct {
	// Policy is the model trained (required).
	Policy Policy
	// BaseModels are the base models served, as get_server_capabilities
	// lists them; create_model refuses others with 400.
	BaseModels []string
	// CheckpointDir receives save_weights_for_sampler's files,
	// CheckpointDir/MODEL/NAME.json. Empty: saves fail (category "user").
	CheckpointDir string
	// APIKey, when set, is required in every request's X-API-Key header
	// (401 otherwise).
	APIKey string
	// JWTLifetime, when positive, serves the SDK's JWT auth mode:
	// client/config says pjwt_auth_enabled, POST auth/token trades the API
	// key for a JWT that expires JWTLifetime later (by Now, in whole
	// seconds), and every route but healthz, client/config and auth/token
	// wants that JWT in X-API-Key instead of the key (401 "Invalid JWT"
	// otherwise: missing, altered, of another server, or expired).
	JWTLifetime time.Duration
	// SessionTTL is how long a session lives without a heartbeat
	// (DefaultSessionTTL).
	SessionTTL time.Duration
	// PollTimeout bounds one retrieve_future long poll (DefaultPollTimeout);
	// PollAnswer says what is answered then.
	PollTimeout time.Duration
	PollAnswer  PollAnswer
	// MaxBodyBytes caps request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Persist keeps each model's state (parameters, optimizer state, seq_ids
	// and kept futures) in CheckpointDir/MODEL/trainer-state.json at the
	// end of every step, before the step's save is answered, and Open
	// restores the models found there: a restarted trainer trains them on
	// and answers the replays of their last steps, as a hosted Tinker
	// service outlives its clients.
	Persist bool
	// KeptSteps bounds the server's memory over a long run: the futures of
	// a model's requests are kept, for retrieve_future and for replays,
	// until KeptSteps later saves have run (DefaultKeptSteps); then a
	// retrieve of one is 410 and a replay of its seq_id is 410. A client
	// replays only its last step or two, after a restart.
	KeptSteps int
	// KeptSamples bounds the sampling futures kept (DefaultKeptSamples):
	// past it, the oldest is let go (its retrieve and its replay are 410).
	KeptSamples int
	// StepTime is how long each optim_step takes before it steps (0:
	// none), so that a loop training against the sim feels a GPU step's
	// time: asynchronous training and back-pressure show only then.
	StepTime time.Duration
	// ChunkDatums and ChunkBytes are the datums and body bytes per
	// forward_backward request that client/config announces
	// (fwdbwd_max_chunk_len, fwdbwd_max_chunk_bytes_count; DefaultChunkDatums,
	// DefaultChunkBytes). They are advice to clients: larger requests are
	// served, up to MaxBodyBytes.
	ChunkDatums, ChunkBytes int
	// Seed seeds fault injection.
	Seed uint64
	// Faults sets the injected failure rates (Server.SetFaults changes them).
	Faults Faults
	// Now is the clock sessions expire by (default time.Now); tests move it.
	Now func() time.Time
	// Logger receives request failures (default: discard).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.KeptSteps <= 0 {
		c.KeptSteps = DefaultKeptSteps
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Faults.RetryAfter <= 0 {
		c.Faults.RetryAfter = DefaultRetryAfter
	}
	if c.KeptSamples <= 0 {
		c.KeptSamples = DefaultKeptSamples
	}
	if c.ChunkDatums <= 0 {
		c.ChunkDatums = DefaultChunkDatums
	}
	if c.ChunkBytes <= 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
