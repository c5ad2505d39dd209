package llm

import (
	"context"
	"maps"
	"strconv"
)

// WeightVersionPinHeader is the request header a pinned call sends: the
// weight version, a decimal number, its generation is to be served with.
// vLLM and SGLang serve one version at a time and ignore it; the sim's
// inference server keeps its last versions and honours it while it holds
// the version named. Either way the server reports
// the version that served the call, which the Turn records
// (Turn.WeightVersion): a server that ignored the pin is never recorded as
// having honoured it.
const WeightVersionPinHeader = "X-Weight-Version-Pin"

// pinsKey carries the weight version pins of a context, by client role.
type pinsKey struct{}

// WithWeightVersionPin returns ctx asking every call made under it by a
// client of role (Config.Role) to be served by weight version v (see
// WeightVersionPinHeader); pins of other roles already in ctx stay. An
// asynchronous trainer pins a rollout's calls to the version its step was
// scheduled at, so weights synced while it runs do not reach it where the
// server can keep several.
func WithWeightVersionPin(ctx context.Context, role string, v int64) context.Context {
	prev, _ := ctx.Value(pinsKey{}).(map[string]int64)
	pins := make(map[string]int64, len(prev)+1)
	maps.Copy(pins, prev)
	pins[role] = v
	return context.WithValue(ctx, pinsKey{}, pins)
}

// weightVersionPin returns the pin of role's calls under ctx, if any, as
// the header's value.
func weightVersionPin(ctx context.Context, role string) (string, bool) {
	pins, _ := ctx.Value(pinsKey{}).(map[string]int64)
	v, ok := pins[role]
	if !ok {
		return "", false
	}
	return strconv.FormatInt(v, 10), true
}
