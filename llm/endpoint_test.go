package llm

import (
	"reflect"
	"testing"
)

func TestOnPolicySamplingFillsOnlyUnset(t *testing.T) {
	e := OnPolicySampling(EndpointConfig{})
	if off := e.Sampling().OffPolicy(); len(off) > 0 {
		t.Errorf("OnPolicySampling of an empty endpoint is off-policy: %v", off)
	}
	if e.TopK == nil || *e.TopK != -1 {
		t.Errorf("top_k = %v, want -1 (off)", e.TopK)
	}
	temp := 0.6
	set := OnPolicySampling(EndpointConfig{Temperature: &temp})
	if set.Temperature != &temp {
		t.Errorf("OnPolicySampling replaced a temperature that was set")
	}
	if got := set.Sampling().OffPolicy(); !reflect.DeepEqual(got, []string{"temperature 0.6"}) {
		t.Errorf("OffPolicy = %v, want only the temperature", got)
	}
	// A fresh value each call: no endpoint shares another's settings.
	if a, b := OnPolicySampling(EndpointConfig{}), OnPolicySampling(EndpointConfig{}); a.Temperature == b.Temperature {
		t.Errorf("OnPolicySampling shares sampling pointers")
	}
}

func TestEndpointSamplingCarriesEverySetting(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	k := 20
	e := EndpointConfig{Temperature: f(0.7), TopP: f(0.9), TopK: &k, MinP: f(0.05), RepetitionPenalty: f(1.1),
		PresencePenalty: f(0.2), FrequencyPenalty: f(0.3), Stop: []string{"</answer>"}, MaxTokens: 512,
		ChatTemplateKwargs: map[string]any{"enable_thinking": false}}
	want := Sampling{Temperature: e.Temperature, TopP: e.TopP, TopK: e.TopK, MinP: e.MinP, RepetitionPenalty: e.RepetitionPenalty,
		PresencePenalty: e.PresencePenalty, FrequencyPenalty: e.FrequencyPenalty, Stop: e.Stop, MaxTokens: 512,
		ChatTemplateKwargs: e.ChatTemplateKwargs}
	if got := e.Sampling(); !reflect.DeepEqual(got, want) {
		t.Errorf("Sampling() = %+v, want %+v", got, want)
	}
}
