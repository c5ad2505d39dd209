package policy

// callCache memoises parseCall (see memo). Each assistant turn's tool calls
// come back with every later request.
type callCache = memo[callKey, parsedCall]

// callKey is what parseCall reads of a tool call.
type callKey struct{ name, arguments string }

type parsedCall struct {
	call call
	ok   bool
}

// newCallCache returns a call cache of at most maxBytes. An entry costs its
// name, its arguments twice (raw and lower-cased), its lists' strings and
// the call's headers.
func newCallCache(maxBytes int64) *callCache {
	return newMemo(maxBytes, func(k callKey, p parsedCall) int {
		n := 200 + len(k.name) + 2*len(k.arguments) + len(p.call.task) + len(p.call.goal)
		for _, s := range p.call.query {
			n += 16 + len(s)
		}
		for _, s := range p.call.url {
			n += 16 + len(s)
		}
		return n
	})
}

// parseCallCached is parseCall through cc. The call's lists are shared and
// must not be modified.
func parseCallCached(cc *callCache, tc ToolCall) (call, bool) {
	p := cc.get(callKey{tc.Name, tc.Arguments}, func(k callKey) parsedCall {
		cl, ok := parseCall(ToolCall{Name: k.name, Arguments: k.arguments})
		return parsedCall{cl, ok}
	})
	return p.call, p.ok
}
