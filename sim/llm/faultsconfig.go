package llm

import "github.com/mgrpo/mgrpo/internal/yamlstrict"

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
