package gateway

import (
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// historyEdit is how a request rewrote the conversation its trajectory had
// reached: at is the index of the first message that differs from what the
// model already saw, why says what changed.
type historyEdit struct {
	at  int
	why string
}

// editOf reports whether msgs rewrites the history of a trajectory whose
// conversation (last request and the answer returned) is prev: the same task
// (first user message), but a message the model had already seen is
// changed, removed or replaced by one of msgs, so msgs cannot continue the
// sequence sampled so far (truncation, summarization, a changed system
// prompt). A request that only extends prev is not an edit (pick takes
// those first), nor one for another task, nor one that stops at an earlier
// point of prev without a message of its own: that is how a parallel
// sub-agent with the same task starts. An
// executor trajectory that ended on a report (its last answer called no
// tools) is finished: a request with the same task is a new executor, not
// an edit.
func editOf(role string, prev, msgs []openai.ChatCompletionMessage) (historyEdit, bool) {
	task := firstUserIndex(prev)
	if task < 0 {
		return historyEdit{}, false
	}
	other := firstUserIndex(msgs)
	if other < 0 || !sameMessage(prev[task], msgs[other]) {
		return historyEdit{}, false
	}
	if role == RoleExecutor && len(prev[len(prev)-1].ToolCalls) == 0 {
		return historyEdit{}, false
	}
	at := 0
	for at < len(prev) && at < len(msgs) && sameMessage(prev[at], msgs[at]) {
		at++
	}
	if at == len(prev) {
		return historyEdit{}, false // msgs extends prev: not an edit
	}
	if at == len(msgs) {
		// msgs is an earlier point of prev with nothing of its own: a
		// parallel sub-agent with the same task starting (or a turn
		// regenerated, which cannot be told apart), so a new trajectory.
		return historyEdit{}, false
	}
	return historyEdit{at: at, why: describeEdit(prev, msgs, at)}, true
}

// describeEdit says, for people, what changed at message at.
func describeEdit(prev, msgs []openai.ChatCompletionMessage, at int) string {
	if at >= len(msgs) {
		// A named trajectory's request (editOf never describes these).
		return fmt.Sprintf("the request stops at message %d of the %d the model saw (a turn regenerated from an earlier point)", at, len(prev))
	}
	if prev[at].Role == openai.ChatMessageRoleSystem || msgs[at].Role == openai.ChatMessageRoleSystem {
		return fmt.Sprintf("message %d: the system prompt changed", at)
	}
	// Messages dropped: the request resumes with a later message of prev.
	for j := at + 1; j < len(prev); j++ {
		if sameMessage(prev[j], msgs[at]) {
			return fmt.Sprintf("messages %d-%d of the %d the model saw were removed (truncation)", at, j-1, len(prev))
		}
	}
	for j := at + 1; j < len(msgs); j++ {
		if sameMessage(prev[at], msgs[j]) {
			return fmt.Sprintf("messages were inserted at %d, before message %d (%s) the model saw", at, at, prev[at].Role)
		}
	}
	return fmt.Sprintf("message %d (%s) the model saw was removed or replaced (truncation or summarization)", at, prev[at].Role)
}

// firstUserIndex is the index of the first user message, -1 when none.
func firstUserIndex(msgs []openai.ChatCompletionMessage) int {
	for i, m := range msgs {
		if m.Role == openai.ChatMessageRoleUser {
			return i
		}
	}
	return -1
}
