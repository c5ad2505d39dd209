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

func newCallCache() *callCache { return newMemo[callKey, parsedCall](maxCachedTexts) }

// parseCallCached is parseCall through cc. The call's lists are shared and
// must not be modified.
func parseCallCached(cc *callCache, tc ToolCall) (call, bool) {
	p := cc.get(callKey{tc.Name, tc.Arguments}, func(k callKey) parsedCall {
		cl, ok := parseCall(ToolCall{Name: k.name, Arguments: k.arguments})
		return parsedCall{cl, ok}
	})
	return p.call, p.ok
}
