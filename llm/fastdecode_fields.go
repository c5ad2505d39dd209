package llm

import (
	"bytes"
	"encoding/json"
	"reflect"

	openai "github.com/sashabaranov/go-openai"

	"github.com/mgrpo/mgrpo/internal/jsonfast"
)

// The small members of a response (ids, names, counts, finish reasons, the
// message) were decoded by encoding/json from a rest object, which cost as
// much as all the token ids. The helpers here decode their usual shapes
// directly. A value of another shape is still handed to encoding/json
// through the rest object, and a key encoding/json would match to a field
// only by case folding makes the fast decoder give up, so the result stays
// encoding/json's.

// Field names encoding/json matches keys against, per decoded type.
var (
	chatTopFields       = fieldNames(reflect.TypeFor[ChatResponse]())
	chatChoiceFields    = fieldNames(reflect.TypeFor[ChatChoice]())
	messageFields       = fieldNames(reflect.TypeFor[ChatMessage]())
	toolCallFields      = fieldNames(reflect.TypeFor[openai.ToolCall]())
	functionCallFields  = fieldNames(reflect.TypeFor[openai.FunctionCall]())
	usageFields         = fieldNames(reflect.TypeFor[openai.Usage]())
	promptDetailsFields = fieldNames(reflect.TypeFor[openai.PromptTokensDetails]())
	metadataFields      = fieldNames(reflect.TypeFor[ResponseMetadata]())
	metaInfoFields      = fieldNames(reflect.TypeFor[MetaInfo]())
	generateFields      = fieldNames(reflect.TypeFor[GenerateResponse]())
)

// fieldNames lists the member names of struct type t as encoding/json sees
// them (see jsonfast.FieldNames).
func fieldNames(t reflect.Type) []string { return jsonfast.FieldNames(t) }

// matchesField reports whether encoding/json would store key's value in a
// field named by one of names.
func matchesField(key []byte, names []string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// other consumes the value of a key the fast decoder does not decode
// itself: it gives up when the key folds to one of the owned names, hands a
// field's value to r (or gives up when r is nil) and skips an unknown
// member, as encoding/json ignores it.
func (s *jscan) other(r *restObject, key []byte, owned, fields []string) bool {
	switch {
	case foldsTo(key, owned...):
		return s.fail(FallbackFoldedKey)
	case !matchesField(key, fields):
		return s.Skip(0)
	case r == nil:
		return false
	}
	return s.rest(r, key, nil)
}

// orRest decodes a member's value with fast; when fast refuses it, the
// value goes to r, for encoding/json to give its result or error, and the
// reason fast gave is forgotten.
func (s *jscan) orRest(r *restObject, key []byte, fast func() bool) bool {
	s.WS()
	start := s.I
	if fast() {
		return true
	}
	s.I, s.why = start, ""
	return s.rest(r, key, nil)
}

// textTo decodes a string (or null) into *dst.
func (s *jscan) textTo(dst *string) bool {
	v, ok := s.text()
	if ok {
		*dst = v
	}
	return ok
}

// intTo decodes an integer (or null, which leaves *dst) into *dst.
func (s *jscan) intTo(dst *int) bool {
	if s.Null() {
		return true
	}
	v, ok := s.Int()
	if ok {
		*dst = v
	}
	return ok
}

// rawTo stores a copy of any value in *dst, as json.RawMessage does
// (null included).
func (s *jscan) rawTo(dst *json.RawMessage) bool {
	s.WS()
	start := s.I
	if !s.Skip(0) {
		return false
	}
	*dst = bytes.Clone(s.B[start:s.I])
	return true
}

// usage decodes token counts and prompt_tokens_details (completion
// details other than null are refused).
func (s *jscan) usage(dst *openai.Usage) bool {
	var (
		u    openai.Usage
		seen uint
	)
	ok := s.Null() || s.members(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return s.once(&seen, 1) && s.intTo(&u.PromptTokens)
		case "completion_tokens":
			return s.once(&seen, 2) && s.intTo(&u.CompletionTokens)
		case "total_tokens":
			return s.once(&seen, 4) && s.intTo(&u.TotalTokens)
		case "prompt_tokens_details":
			return s.once(&seen, 8) && s.promptTokensDetails(&u.PromptTokensDetails)
		case "completion_tokens_details":
			return s.once(&seen, 16) && s.Null()
		}
		return s.other(nil, key, nil, usageFields)
	})
	if ok {
		*dst = u
	}
	return ok
}

// promptTokensDetails decodes usage.prompt_tokens_details (null is nil),
// which vLLM (--enable-prompt-tokens-details) and SGLang
// (--enable-cache-report) fill with cached_tokens.
func (s *jscan) promptTokensDetails(dst **openai.PromptTokensDetails) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	d := new(openai.PromptTokensDetails)
	var seen uint
	ok := s.members(func(key []byte) bool {
		switch string(key) {
		case "cached_tokens":
			return s.once(&seen, 1) && s.intTo(&d.CachedTokens)
		case "audio_tokens":
			return s.once(&seen, 2) && s.intTo(&d.AudioTokens)
		}
		return s.other(nil, key, nil, promptDetailsFields)
	})
	if ok {
		*dst = d
	}
	return ok
}

// metadata decodes SGLang's response metadata (null is nil).
func (s *jscan) metadata(dst **ResponseMetadata) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	md := new(ResponseMetadata)
	var seen uint
	ok := s.members(func(key []byte) bool {
		if string(key) == "weight_version" {
			return s.once(&seen, 1) && s.textTo(&md.WeightVersion)
		}
		return s.other(nil, key, nil, metadataFields)
	})
	if ok {
		*dst = md
	}
	return ok
}
