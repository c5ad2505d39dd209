package agents

// Split marks a turn of a trajectory at which its token sequence starts
// anew for a reason the agent side knows, so the farm's assembly can say
// why a trajectory yields more than one sample: a gateway agent that
// rewrote its history (Reason "history_edit", rollout.SplitHistoryEdit) or
// a context cut ("context_cut"). Drift is never declared: the farm finds it
// in the token ids.
type Split struct {
	// Turn is the index of the first turn of the new sequence.
	Turn int `json:"turn"`
	// Reason is "history_edit" or "context_cut".
	Reason string `json:"reason"`
	// Message is the index of the first request message that differs
	// from what the model had already seen (history edits).
	Message int `json:"message"`
	// Detail says what changed, for people ("message 3 (tool) removed").
	Detail string `json:"detail,omitempty"`
}

// splitContextCut is rollout.SplitContextCut (agents do not import the
// rollout layer): the built-in loop records it where the client had to
// render a conversation again because its sequence outgrew the context.
const splitContextCut = "context_cut"
