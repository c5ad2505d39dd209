package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/mgrpo/mgrpo/agents"
	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/llm"
	"github.com/mgrpo/mgrpo/tools"
)

// ErrNotRecorded is the error of a model call the recording does not
// hold: the rollout stops there (its trajectory records the error).
var ErrNotRecorded = errors.New("request not in the recording")

// Miss is a request the recording does not hold: which role sent it, in
// which trajectory and turn, and how it differs from the request recorded
// there (empty Recorded: none was).
type Miss struct {
	Role string `json:"role"`
	// Trajectory is the request's routing key: the rollout's id
	// (run/step/query/k) and the agent's place in it.
	Trajectory string `json:"trajectory"`
	Turn       int    `json:"turn"`
	// Tool names a tool call's miss (Role and Turn are then unset).
	Tool string `json:"tool,omitempty"`
	// Diff is a line diff of the recorded and the new request, as
	// indented JSON ("-" recorded, "+" new).
	Diff string `json:"diff"`
}

// HasRecording reports whether kv holds a recording.
func HasRecording(ctx context.Context, kv KV) (bool, error) {
	_, ok, err := kv.Get(ctx, keyMarker)
	return ok, err
}

// Player answers the agents' calls from a recording. Safe for concurrent
// use.
type Player struct {
	kv     KV
	mu     sync.Mutex
	misses []Miss
	calls  int64
}

// NewPlayer returns a player of the recording in kv.
func NewPlayer(kv KV) *Player { return &Player{kv: kv} }

// Misses returns the requests the recording did not hold, in the order
// they came.
func (p *Player) Misses() []Miss {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Miss(nil), p.misses...)
}

// Calls counts the model calls answered from the recording.
func (p *Player) Calls() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

func (p *Player) miss(m Miss) {
	p.mu.Lock()
	p.misses = append(p.misses, m)
	p.mu.Unlock()
}

// Model returns the recorded model of role.
func (p *Player) Model(role string) agents.Model { return playedModel{p: p, role: role} }

type playedModel struct {
	p    *Player
	role string
}

func (pm playedModel) Chat(ctx context.Context, req llm.Request) (*llm.Turn, error) {
	body, err := requestBytes(req)
	if err != nil {
		return nil, err
	}
	value, ok, err := pm.p.kv.Get(ctx, responseKey(pm.role, req, body))
	if err != nil {
		return nil, fmt.Errorf("replay: read the recording: %w", err)
	}
	turn := turnOf(req)
	if !ok {
		recorded, _, _ := pm.p.kv.Get(ctx, requestKey(pm.role, req.TrajectoryKey, turn))
		pm.p.miss(Miss{Role: pm.role, Trajectory: req.TrajectoryKey, Turn: turn, Diff: Diff(recorded, body)})
		return nil, fmt.Errorf("%w: %s turn %d", ErrNotRecorded, req.TrajectoryKey, turn)
	}
	var resp response
	if err := json.Unmarshal(value, &resp); err != nil {
		return nil, fmt.Errorf("replay: %s turn %d: corrupt recording: %w", req.TrajectoryKey, turn, err)
	}
	pm.p.mu.Lock()
	pm.p.calls++
	pm.p.mu.Unlock()
	if resp.Error != "" {
		return resp.Turn, errors.New(resp.Error)
	}
	return resp.Turn, nil
}

// Toolbox returns a toolbox offering tb's tools whose calls are answered
// from the recording.
func (p *Player) Toolbox(tb agents.Toolbox) agents.Toolbox { return playedToolbox{p: p, tb: tb} }

type playedToolbox struct {
	p  *Player
	tb agents.Toolbox
}

func (pt playedToolbox) Specs() []tools.Spec { return pt.tb.Specs() }

func (pt playedToolbox) Call(ctx context.Context, name string, args json.RawMessage) tools.Observation {
	value, ok, err := pt.p.kv.Get(ctx, toolKey(name, args))
	var obs tools.Observation
	if err == nil && ok {
		if err = json.Unmarshal(value, &obs); err == nil {
			return obs
		}
	}
	if err == nil {
		pt.p.miss(Miss{Tool: name, Diff: "+ " + string(args)})
		err = ErrNotRecorded
	}
	return tools.Observation{Text: fmt.Sprintf("Error: %s(%s): %v", name, args, err),
		Meta: tools.Meta{Tool: name, Class: failure.ClassNetwork, Error: err.Error()}}
}

// Diff returns a line diff of two JSON documents, indented: the lines
// only a holds marked "-", those only b holds "+", a few equal lines
// around each change for context.
func Diff(a, b []byte) string {
	if len(a) == 0 {
		return "(no request was recorded at this turn)\n" + prefixLines("+ ", indent(b))
	}
	al, bl := strings.Split(indent(a), "\n"), strings.Split(indent(b), "\n")
	// The longest common subsequence of lines, on what lies between the
	// common head and tail (requests share most of their lines).
	head := 0
	for head < len(al) && head < len(bl) && al[head] == bl[head] {
		head++
	}
	tail := 0
	for tail < len(al)-head && tail < len(bl)-head && al[len(al)-1-tail] == bl[len(bl)-1-tail] {
		tail++
	}
	am, bm := al[head:len(al)-tail], bl[head:len(bl)-tail]
	var out strings.Builder
	for _, l := range al[max(0, head-3):head] {
		out.WriteString("  " + l + "\n")
	}
	lcs := make([][]int, len(am)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(bm)+1)
	}
	for i := len(am) - 1; i >= 0; i-- {
		for j := len(bm) - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(am) || j < len(bm) {
		switch {
		case i < len(am) && j < len(bm) && am[i] == bm[j]:
			out.WriteString("  " + am[i] + "\n")
			i, j = i+1, j+1
		case i < len(am) && (j == len(bm) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + am[i] + "\n")
			i++
		default:
			out.WriteString("+ " + bm[j] + "\n")
			j++
		}
	}
	for _, l := range al[len(al)-tail : min(len(al), len(al)-tail+3)] {
		out.WriteString("  " + l + "\n")
	}
	return out.String()
}

func indent(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

func prefixLines(p, s string) string {
	var out strings.Builder
	for _, l := range strings.Split(s, "\n") {
		out.WriteString(p + l + "\n")
	}
	return out.String()
}

// Text returns the recorded answer to the request named by kind and
// parts; a request not recorded is a Miss and ErrNotRecorded.
func (p *Player) Text(ctx context.Context, kind string, parts []string) (string, error) {
	return p.TextAt(ctx, kind, "", parts)
}

// TextAt is Text for a request made on behalf of at (an eval's pair
// key; "" for none): a miss names at as its trajectory and, when the
// recording kept a request there, is its diff.
func (p *Player) TextAt(ctx context.Context, kind, at string, parts []string) (string, error) {
	v, ok, err := p.kv.Get(ctx, textKey(kind, parts))
	if err != nil {
		return "", fmt.Errorf("replay: read the recording: %w", err)
	}
	if !ok {
		m := Miss{Role: kind, Trajectory: at, Diff: prefixLines("+ ", strings.Join(parts, "\n"))}
		if at != "" {
			recorded, _, _ := p.kv.Get(ctx, requestKey(kind, at, 0))
			if body, jerr := json.Marshal(parts); jerr == nil {
				m.Diff = Diff(recorded, body)
			}
		}
		p.miss(m)
		if at != "" {
			return "", fmt.Errorf("%w: %s %s", ErrNotRecorded, kind, at)
		}
		return "", fmt.Errorf("%w: %s", ErrNotRecorded, kind)
	}
	return string(v), nil
}
