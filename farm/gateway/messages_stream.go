package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// writeMessagesStream answers a streamed Messages call with Anthropic's
// events, each named on its event line (the SDK dispatches on it):
// message_start, per block content_block_start, its delta (thinking_delta
// and signature_delta, text_delta, input_json_delta) and
// content_block_stop, then message_delta (stop reason, output tokens) and
// message_stop. The engine's answer is complete before the first event, so
// each block is one delta.
func writeMessagesStream(w http.ResponseWriter, msg anthropicMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	emit := func(ev anthropicEvent) {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
	}
	start := msg
	start.Content, start.StopReason, start.StopSequence = []anthropicBlock{}, nil, nil
	start.Usage.OutputTokens = 0
	emit(anthropicEvent{Type: "message_start", Message: &start})
	for i, b := range msg.Content {
		idx := i
		open := b
		var deltas []any
		switch b.Type {
		case "text":
			empty := ""
			open.Text = &empty
			deltas = append(deltas, map[string]string{"type": "text_delta", "text": *b.Text})
		case "thinking":
			empty := ""
			open.Thinking, open.Signature = &empty, &empty
			deltas = append(deltas, map[string]string{"type": "thinking_delta", "thinking": *b.Thinking},
				map[string]string{"type": "signature_delta", "signature": *b.Signature})
		case "tool_use":
			open.Input = json.RawMessage("{}")
			deltas = append(deltas, map[string]string{"type": "input_json_delta", "partial_json": string(b.Input)})
		}
		emit(anthropicEvent{Type: "content_block_start", Index: &idx, ContentBlock: &open})
		for _, d := range deltas {
			emit(anthropicEvent{Type: "content_block_delta", Index: &idx, Delta: d})
		}
		emit(anthropicEvent{Type: "content_block_stop", Index: &idx})
	}
	ev := anthropicEvent{Type: "message_delta", Delta: map[string]*string{"stop_reason": msg.StopReason, "stop_sequence": msg.StopSequence}}
	ev.Usage = &struct {
		OutputTokens int `json:"output_tokens"`
	}{OutputTokens: msg.Usage.OutputTokens}
	emit(ev)
	emit(anthropicEvent{Type: "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
