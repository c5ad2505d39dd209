package llm

import (
	"fmt"
	"strings"
)

// RouteFamilies names groups of token routes that real servers have or lack
// by version. Config.Disabled turns the named families off, so a client's
// probe and fallback can be tested against an "old vLLM" (no render, no
// tokens-in/tokens-out generate) or a server with no token route at all.
type RouteFamilies struct {
	// Render is vLLM's /v1/chat/completions/render and
	// /v1/completions/render.
	Render bool
	// Generate is the tokens-in/tokens-out route: vLLM's
	// /inference/v1/generate, SGLang's /generate.
	Generate bool
	// Derender is vLLM's /v1/chat/completions/derender and
	// /v1/completions/derender.
	Derender bool
	// Tokenize is /tokenize and /detokenize (SGLang: /v1/tokenize and
	// /v1/detokenize).
	Tokenize bool
	// TokenPrompt is a token-id prompt on /v1/completions (and input_ids on
	// SGLang's /generate): off, it is rejected with 400.
	TokenPrompt bool
}

// routeFamilyNames are the names ParseRouteFamilies reads, in order.
var routeFamilyNames = []string{"render", "generate", "derender", "tokenize", "token-prompt"}

// ParseRouteFamilies reads a comma-separated list of route families
// (render, generate, derender, tokenize, token-prompt, or all).
func ParseRouteFamilies(list string) (RouteFamilies, error) {
	var f RouteFamilies
	for _, name := range strings.Split(list, ",") {
		switch strings.TrimSpace(name) {
		case "":
		case "render":
			f.Render = true
		case "generate":
			f.Generate = true
		case "derender":
			f.Derender = true
		case "tokenize":
			f.Tokenize = true
		case "token-prompt":
			f.TokenPrompt = true
		case "all":
			f = RouteFamilies{Render: true, Generate: true, Derender: true, Tokenize: true, TokenPrompt: true}
		default:
			return RouteFamilies{}, fmt.Errorf("route family %q: want a comma-separated list of %s, or all", name, strings.Join(routeFamilyNames, ", "))
		}
	}
	return f, nil
}

// String lists the families in ParseRouteFamilies' form.
func (f RouteFamilies) String() string {
	var out []string
	for i, on := range []bool{f.Render, f.Generate, f.Derender, f.Tokenize, f.TokenPrompt} {
		if on {
			out = append(out, routeFamilyNames[i])
		}
	}
	return strings.Join(out, ",")
}

// template is the server's chat template for one request.
func (s *Server) template(noThinking bool) Template {
	return Template{StripReasoning: s.cfg.StripReasoning, StripReasoningBeforeLastQuery: s.cfg.StripReasoningBeforeLastQuery, DisableThinking: noThinking,
		MergeToolResults: s.cfg.MergeToolResults, CanonicalToolArgs: s.cfg.CanonicalToolArgs, TrimContent: s.cfg.TrimContent}
}

// inputReasoning applies StrictReasoningInput to messages read from in:
// each assistant message keeps only the reasoning of the field the server
// reads.
func (s *Server) inputReasoning(in []wireMessage, msgs []Message) {
	if !s.cfg.StrictReasoningInput {
		return
	}
	legacy := s.cfg.ReasoningContent || s.cfg.Dialect == DialectSGLang
	for i := range msgs {
		field := in[i].Reasoning
		if legacy {
			field = in[i].ReasoningContent
		}
		msgs[i].Reasoning = ""
		if field != nil {
			msgs[i].Reasoning = *field
		}
	}
}
