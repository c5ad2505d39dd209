package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultPreflightTimeout bounds each endpoint's health check in Preflight
// when the context has no earlier deadline.
const DefaultPreflightTimeout = 5 * time.Second

// Preflight asks every endpoint of the pool for GET /health once, with the
// probe the pool uses to re-admit ejected endpoints, so that an unreachable
// or unhealthy server is reported before a run starts instead of as the
// failures of its first rollouts. It returns nil when all answer 200, and
// otherwise one error per failing endpoint, each naming the role and the
// endpoint (credentials redacted) and saying what went wrong. Hosted
// OpenAI-style APIs have no /health: do not preflight their pools.
func (p *Pool) Preflight(ctx context.Context) error {
	var errs []error
	for _, e := range p.eps {
		ectx, cancel := context.WithTimeout(ctx, DefaultPreflightTimeout)
		err := p.probeHealth(ectx, e)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s endpoint %s: %w", p.role, e.display, err))
		}
	}
	return errors.Join(errs...)
}

// probeHealth performs one GET /health on e and says why it failed: the
// transport's error (without the URL, which *url.Error repeats with any
// credentials) or the status of an answer other than 200.
func (p *Pool) probeHealth(ctx context.Context, e *endpoint) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base.JoinPath("health").String(), nil)
	if err != nil {
		return err
	}
	resp, err := p.probe.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("unreachable: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/health answered %s", resp.Status)
	}
	return nil
}
