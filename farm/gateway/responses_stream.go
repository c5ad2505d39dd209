package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// writeResponsesStream answers a streamed Responses call with the events
// the SDKs consume, each numbered: created and in_progress, then per output
// item its added event, its content (a part added, text deltas and done;
// reasoning text; function call arguments) and its done event, then
// completed (or incomplete). The engine's answer is complete before the
// first event, so each text is one delta.
func writeResponsesStream(w http.ResponseWriter, resp responseObject) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	emit := func(ev responsesEvent) {
		ev.SequenceNumber = seq
		seq++
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, data)
	}
	start := resp
	start.Status, start.Output, start.Usage, start.IncompleteDetails = "in_progress", []responseItem{}, nil, nil
	emit(responsesEvent{Type: "response.created", Response: &start})
	emit(responsesEvent{Type: "response.in_progress", Response: &start})
	for i, it := range resp.Output {
		idx := i
		added := it
		switch it.Type {
		case "message", "reasoning":
			added.Content = json.RawMessage("[]")
		case "function_call":
			empty := ""
			added.Arguments = &empty
		}
		if added.Status != "" {
			added.Status = "in_progress"
		}
		emit(responsesEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: &added})
		switch it.Type {
		case "message":
			var parts []outputTextPart
			_ = json.Unmarshal(it.Content, &parts)
			for j, p := range parts {
				ci := j
				empty := p
				empty.Text = ""
				part, _ := json.Marshal(empty)
				emit(responsesEvent{Type: "response.content_part.added", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Part: part})
				text := p.Text
				none := []struct{}{}
				emit(responsesEvent{Type: "response.output_text.delta", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Delta: &text, Logprobs: &none})
				emit(responsesEvent{Type: "response.output_text.done", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Text: &text, Logprobs: &none})
				part, _ = json.Marshal(p)
				emit(responsesEvent{Type: "response.content_part.done", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Part: part})
			}
		case "reasoning":
			var parts []reasoningTextPart
			_ = json.Unmarshal(it.Content, &parts)
			for j, p := range parts {
				ci := j
				text := p.Text
				emit(responsesEvent{Type: "response.reasoning_text.delta", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Delta: &text})
				emit(responsesEvent{Type: "response.reasoning_text.done", OutputIndex: &idx, ContentIndex: &ci, ItemID: it.ID, Text: &text})
			}
		case "function_call":
			emit(responsesEvent{Type: "response.function_call_arguments.delta", OutputIndex: &idx, ItemID: it.ID, Delta: it.Arguments})
			emit(responsesEvent{Type: "response.function_call_arguments.done", OutputIndex: &idx, ItemID: it.ID, Arguments: it.Arguments, Name: it.Name})
		}
		done := it
		emit(responsesEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: &done})
	}
	end := "response.completed"
	if resp.Status == "incomplete" {
		end = "response.incomplete"
	}
	emit(responsesEvent{Type: end, Response: &resp})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
