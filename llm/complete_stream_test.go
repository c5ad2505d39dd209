package llm

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestCompleteStreamIdleTimeoutRetries: a streamed token-id completion
// (the token path's generation) that stalls mid-stream is ended by the
// idle timeout and retried on the pool's other endpoint, whose answer is
// the engine's whole completion, as for chat.
func TestCompleteStreamIdleTimeoutRetries(t *testing.T) {
	for _, dialect := range []string{DialectVLLM, DialectSGLang} {
		t.Run(dialect, func(t *testing.T) {
			ref := mustSim(t, simConfig(dialect, 4), nil)
			rc := mustClient(t, Config{Dialect: dialect, Endpoints: []string{ref.ts.URL}, CaptureTokens: true, Stream: true})
			first, err := rc.Chat(context.Background(), Request{Messages: userMsg(mustWorld(t).Questions[1].Question), Tools: executorTools()})
			if err != nil {
				t.Fatal(err)
			}
			prompt := first.PromptIDs
			req := CompletionRequest{PromptIDs: prompt, Sampling: &Sampling{Seed: ptr(int64(8))}}
			want, err := rc.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			stall, good := stallingSim(t, dialect, 4), mustSim(t, simConfig(dialect, 4), nil)
			c := mustClient(t, Config{Dialect: dialect, Endpoints: []string{stall.ts.URL, good.ts.URL}, CaptureTokens: true, Stream: true, Retry: idleRetry(), Metrics: NewMetrics()})
			got, err := c.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("the retry after the stall failed: %v", err)
			}
			if got.Attempts != 2 || got.Endpoint != good.ts.URL {
				t.Errorf("%d attempts ending on %s, want 2 ending on %s", got.Attempts, got.Endpoint, good.ts.URL)
			}
			if !slices.Equal(got.CompletionIDs, want.CompletionIDs) || !slices.Equal(got.Logprobs, want.Logprobs) || !slices.Equal(got.PromptIDs, prompt) {
				t.Errorf("the retried completion is not the engine's: %d ids, want %d", len(got.CompletionIDs), len(want.CompletionIDs))
			}
			if got.Message.Content != want.Message.Content || got.FinishReason != want.FinishReason {
				t.Errorf("text %q finish %q, want %q %q", got.Message.Content, got.FinishReason, want.Message.Content, want.FinishReason)
			}
		})
	}
}

// TestDecodeCompletionStream: vLLM's streamed /v1/completions assembles
// into the unstreamed answer; a stream cut before [DONE] keeps what it
// carried, marked aborted; an error event is refused.
func TestDecodeCompletionStream(t *testing.T) {
	whole := "data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"Hel\",\"token_ids\":[5],\"prompt_token_ids\":[1,2,3],\"logprobs\":{\"token_logprobs\":[-0.5]},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"lo\",\"token_ids\":[6,7],\"logprobs\":{\"token_logprobs\":[-0.25,-1]},\"finish_reason\":\"stop\",\"stop_reason\":151645}]}\n\n" +
		"data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3,\"total_tokens\":6}}\n\n" +
		"data: [DONE]\n\n"
	resp, err := decodeCompletionStream([]byte(whole))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := completionTurn(resp, []byte(whole), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Message.Content != "Hello" || !slices.Equal(tr.PromptIDs, []int32{1, 2, 3}) || !slices.Equal(tr.CompletionIDs, []int32{5, 6, 7}) ||
		!slices.Equal(tr.Logprobs, []float64{-0.5, -0.25, -1}) || tr.FinishReason != "stop" || tr.StopReason != "151645" || tr.Usage.TotalTokens != 6 {
		t.Errorf("assembled turn %+v", tr)
	}
	cut := whole[:len(whole)-len("data: [DONE]\n\n")-len("data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3,\"total_tokens\":6}}\n\n")]
	cut = cut[:len(cut)-len("data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"lo\",\"token_ids\":[6,7],\"logprobs\":{\"token_logprobs\":[-0.25,-1]},\"finish_reason\":\"stop\",\"stop_reason\":151645}]}\n\n")]
	resp, err = decodeCompletionStream([]byte(cut))
	if !errors.Is(err, ErrStreamEnded) || resp == nil {
		t.Fatalf("cut stream: %v, %v; want ErrStreamEnded with what it carried", resp, err)
	}
	tr, err = completionTurn(resp, []byte(cut), nil)
	if !errors.Is(err, ErrAborted) || tr == nil || !slices.Equal(tr.CompletionIDs, []int32{5}) || tr.FinishReason != "abort" {
		t.Errorf("cut stream's turn %+v, %v; want the first id, aborted", tr, err)
	}
	bad := "data: {\"error\":{\"message\":\"engine died\"}}\n\n"
	if _, err := decodeCompletionStream([]byte(bad)); !errors.Is(err, ErrMalformedResponse) {
		t.Errorf("error event: %v, want ErrMalformedResponse", err)
	}
}
