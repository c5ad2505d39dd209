package trainer

import (
	"math"
	"net/http"
)

// adamConfig is one optim_step's hyperparameters, with the SDK's
// AdamParams defaults for the fields left out.
type adamConfig struct {
	lr, beta1, beta2, eps, weightDecay, clipNorm float64
}

func parseAdam(p *adamParams) (adamConfig, *httpError) {
	if p == nil {
		return adamConfig{}, errorf(http.StatusBadRequest, "adam_params: missing")
	}
	c := adamConfig{lr: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12}
	for _, f := range []struct {
		v   *float64
		dst *float64
	}{{p.LearningRate, &c.lr}, {p.Beta1, &c.beta1}, {p.Beta2, &c.beta2}, {p.Eps, &c.eps}, {p.WeightDecay, &c.weightDecay}, {p.GradClipNorm, &c.clipNorm}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	switch {
	case !(c.lr >= 0):
		return c, errorf(http.StatusBadRequest, "adam_params.learning_rate %v: want ≥ 0", c.lr)
	case !(c.beta1 >= 0 && c.beta1 < 1):
		return c, errorf(http.StatusBadRequest, "adam_params.beta1 %v: want 0 ≤ beta1 < 1", c.beta1)
	case !(c.beta2 >= 0 && c.beta2 < 1):
		return c, errorf(http.StatusBadRequest, "adam_params.beta2 %v: want 0 ≤ beta2 < 1", c.beta2)
	case !(c.eps >= 0):
		return c, errorf(http.StatusBadRequest, "adam_params.eps %v: want ≥ 0", c.eps)
	case !(c.weightDecay >= 0):
		return c, errorf(http.StatusBadRequest, "adam_params.weight_decay %v: want ≥ 0", c.weightDecay)
	case !(c.clipNorm >= 0):
		return c, errorf(http.StatusBadRequest, "adam_params.grad_clip_norm %v: want ≥ 0 (0: no clipping)", c.clipNorm)
	}
	return c, nil
}

// adamState is the optimizer's moments and step count.
type adamState struct {
	m, v []float64
	t    int
}

// step applies one AdamW step to params with grad (the gradient of the
// summed loss): the global norm clipped to clipNorm when positive, the
// moments updated and bias-corrected, decoupled weight decay. It returns
// the norm of grad before clipping and the norm of the update.
func (a *adamState) step(params, grad []float64, c adamConfig) (gradNorm, updateNorm float64) {
	if a.m == nil {
		a.m, a.v = make([]float64, len(params)), make([]float64, len(params))
	}
	for _, g := range grad {
		gradNorm += g * g
	}
	gradNorm = math.Sqrt(gradNorm)
	scale := 1.0
	if c.clipNorm > 0 && gradNorm > c.clipNorm {
		scale = c.clipNorm / gradNorm
	}
	a.t++
	bc1 := 1 - math.Pow(c.beta1, float64(a.t))
	bc2 := 1 - math.Pow(c.beta2, float64(a.t))
	for i := range params {
		g := grad[i] * scale
		a.m[i] = c.beta1*a.m[i] + (1-c.beta1)*g
		a.v[i] = c.beta2*a.v[i] + (1-c.beta2)*g*g
		mhat, vhat := a.m[i]/bc1, a.v[i]/bc2
		old := params[i]
		params[i] -= c.lr * c.weightDecay * params[i]
		params[i] -= c.lr * mhat / (math.Sqrt(vhat) + c.eps)
		d := params[i] - old
		updateNorm += d * d
	}
	return gradNorm, math.Sqrt(updateNorm)
}
