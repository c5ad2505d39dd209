package llm

import (
	"github.com/mgrpo/mgrpo/internal/problems"
	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// FaultsConfig are the faults the servers inject as a run's configuration
// holds them (its sim_faults keys; mgrpo sim's --fault-* flags), read by
// the composition root.
type FaultsConfig struct {
	Rate503    float64             `yaml:"rate_503" flag:"503" doc:"rate of generation requests answered 503 (in [0, 1])"`
	Rate500    float64             `yaml:"rate_500" flag:"500" doc:"rate of generation requests answered 500 (in [0, 1])"`
	RateDrop   float64             `yaml:"rate_drop" flag:"drop" doc:"rate of connections dropped mid-answer (in [0, 1])"`
	DeathFor   yamlstrict.Duration `yaml:"endpoint_death" flag:"endpoint-death" doc:"the servers answer 503 to every generation request for {{DURATION}} after every death_every requests (0: never)"`
	DeathEvery int                 `yaml:"death_every" flag:"death-every" zero:"200" doc:"with endpoint_death: {{N}} generation requests between deaths"`
}

// Faults returns the servers' faults of f.
func (f FaultsConfig) Faults() Faults {
	out := Faults{Rate503: f.Rate503, Rate500: f.Rate500, RateDrop: f.RateDrop}
	if f.DeathFor.Duration > 0 {
		out.DeathFor, out.DeathEvery = f.DeathFor.Duration, f.DeathEvery
		if out.DeathEvery == 0 {
			out.DeathEvery = 200
		}
	}
	return out
}

// Check reports the faults of f that cannot be injected, naming each
// sim_faults key and its flag: rates outside [0, 1] or summing to more
// than 1, and a negative death or death interval.
func (f FaultsConfig) Check() []error {
	var p problems.List
	for _, r := range []struct {
		key, flag string
		v         float64
	}{{"sim_faults.rate_503", "sim-fault-503", f.Rate503}, {"sim_faults.rate_500", "sim-fault-500", f.Rate500}, {"sim_faults.rate_drop", "sim-fault-drop", f.RateDrop}} {
		if !(r.v >= 0 && r.v <= 1) {
			p.Add(r.key, r.flag, "%v: must be in [0, 1]", r.v)
		}
	}
	if f.Rate503+f.Rate500+f.RateDrop > 1 {
		p.Add("sim_faults", "sim-fault-503", "the rates sum to more than 1")
	}
	if f.DeathFor.Duration < 0 {
		p.Add("sim_faults.endpoint_death", "sim-fault-endpoint-death", "%v: must not be negative (0: never)", f.DeathFor.Duration)
	}
	if f.DeathEvery < 0 {
		p.Add("sim_faults.death_every", "sim-fault-death-every", "%d: must not be negative", f.DeathEvery)
	}
	return p
}
