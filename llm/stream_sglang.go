package llm

import (
	"encoding/json"
)

// generateEvent is one event of SGLang's streamed /generate: the text, the
// output ids and the meta info so far. By default (SGLang's
// incremental_streaming_output off) each event carries everything from
// the start; with it on, only what is new since the previous event.
// meta_info.completion_tokens counts from the start either way, which is
// how decodeGenerateStream tells the two apart.
type generateEvent struct {
	Text      *string         `json:"text"`
	OutputIDs []int32         `json:"output_ids"`
	MetaInfo  *MetaInfo       `json:"meta_info"`
	Error     json.RawMessage `json:"error"`
}

// decodeGenerateStream assembles SGLang's streamed /generate into the
// answer the unstreamed route gives (see decodeGenerate): the whole text,
// the output ids, and meta_info with every output logprob and the last
// event's finish reason. A stream that ends before its [DONE] event
// returns what it carried with ErrStreamEnded, for a partial turn; an
// event that is not JSON of that shape, an error event, or output ids
// that neither restate nor extend those before them are a *DecodeError
// wrapping ErrMalformedResponse. Each event goes through
// fastGenerateEvent; what it leaves to encoding/json is counted in met
// (which may be nil). It never panics.
func decodeGenerateStream(body []byte, met *Metrics) (*GenerateResponse, error) {
	var (
		g    GenerateResponse
		seen bool
		text []byte
	)
	done, err := sseEvents(body, func(data []byte) error {
		var ev generateEvent
		fb := fastGenerateEvent(data, &ev)
		met.fallback(fb)
		if fb.body != "" {
			ev = generateEvent{}
			if err := json.Unmarshal(data, &ev); err != nil {
				return streamError(body, "%w: event %.80q: %v", ErrMalformedResponse, data, err)
			}
		}
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			return streamError(body, "%w: error event: %s", ErrMalformedResponse, errorMessage(data))
		}
		if ev.MetaInfo == nil {
			return streamError(body, "%w: event without meta_info", ErrMalformedResponse)
		}
		m := ev.MetaInfo
		// Cumulative unless the counts say the event only extends.
		cumulative := m.CompletionTokens == 0 || m.CompletionTokens == len(ev.OutputIDs)
		if !cumulative && m.CompletionTokens != len(g.OutputIDs)+len(ev.OutputIDs) {
			return streamError(body, "%w: %d output ids after %d, meta_info counts %d", ErrMalformedResponse,
				len(ev.OutputIDs), len(g.OutputIDs), m.CompletionTokens)
		}
		lps := g.MetaInfo.OutputTokenLogprobs
		if cumulative {
			g.OutputIDs = append(g.OutputIDs[:0], ev.OutputIDs...)
			lps = append(lps[:0], m.OutputTokenLogprobs...)
			if ev.Text != nil {
				text = append(text[:0], *ev.Text...)
			}
		} else {
			g.OutputIDs = append(g.OutputIDs, ev.OutputIDs...)
			lps = append(lps, m.OutputTokenLogprobs...)
			if ev.Text != nil {
				text = append(text, *ev.Text...)
			}
		}
		g.MetaInfo = *m
		g.MetaInfo.OutputTokenLogprobs = lps
		seen = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	g.Text = string(text)
	switch {
	case !seen:
		return nil, streamError(body, "%w: no event", ErrStreamEnded)
	case !done:
		return &g, streamError(body, "%w: no [DONE] event", ErrStreamEnded)
	}
	return &g, nil
}
