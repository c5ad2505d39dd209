package llm

import (
	"context"
	"errors"
	"io"
	"time"
)

// idleWatch ends a streamed attempt that receives nothing for its idle
// timeout: a timer, started when the request goes out and pushed back by
// every read of the answer that returns bytes, cancels the attempt's
// context with ErrIdleTimeout as its cause. Cancelling that context closes
// the connection, which makes vLLM and SGLang abort the generation.
type idleWatch struct {
	d     time.Duration
	timer *time.Timer
}

// watchIdle returns ctx cancelled once d passes without a read, and the
// watch that body and stop use. The watch starts at once: a server that
// never answers is as stalled as one that stops mid-stream.
func watchIdle(ctx context.Context, d time.Duration) (context.Context, *idleWatch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &idleWatch{d: d}
	w.timer = time.AfterFunc(d, func() { cancel(ErrIdleTimeout) })
	return ctx, w
}

// idleTimedOut reports whether an attempt's context ended by its idle
// watch.
func idleTimedOut(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrIdleTimeout)
}

// body returns rc with each read that returns bytes resetting the watch;
// a nil watch returns rc.
func (w *idleWatch) body(rc io.ReadCloser) io.ReadCloser {
	if w == nil {
		return rc
	}
	return &idleBody{ReadCloser: rc, w: w}
}

// stop ends the watch; it is safe on a nil watch and more than once.
func (w *idleWatch) stop() {
	if w != nil {
		w.timer.Stop()
	}
}

type idleBody struct {
	io.ReadCloser
	w *idleWatch
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		// Reset may race with a firing timer; a fired one has already
		// cancelled the read, which then fails, so nothing is lost.
		b.w.timer.Reset(b.w.d)
	}
	return n, err
}
