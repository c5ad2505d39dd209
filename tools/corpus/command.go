package corpus

import (
	"context"
	"fmt"
	"io"
	"time"
)

// IndexCommand holds the options of `mgrpo corpus index`.
type IndexCommand struct {
	In, Out   string
	BatchSize int
	Restart   bool
}

// RunIndexCommand builds (or resumes) the index and prints progress lines
// to progress, at most one a second, plus a final summary.
func RunIndexCommand(ctx context.Context, opts IndexCommand, progress io.Writer) error {
	var last time.Time
	st, err := Build(ctx, BuildConfig{
		In: opts.In, Out: opts.Out, BatchSize: opts.BatchSize, Restart: opts.Restart,
		Progress: func(s Stats) {
			if time.Since(last) < time.Second {
				return
			}
			last = time.Now()
			fmt.Fprintf(progress, "indexed %d documents (%.1f%% of %s, %.0f docs/s)\n",
				s.Docs, 100*float64(s.Offset)/float64(max(s.Size, 1)), opts.In, float64(s.Docs)/max(s.Elapsed.Seconds(), 1e-9))
		},
	})
	if err != nil {
		if st.Docs > 0 {
			fmt.Fprintf(progress, "stopped after %d documents; run the same command again to resume\n", st.Docs)
		}
		return err
	}
	how := "built"
	switch {
	case st.Elapsed == 0 && st.Done:
		how = "already complete"
	case st.Resumed:
		how = "resumed and completed"
	}
	fmt.Fprintf(progress, "index %s: %s, %d documents, %d lines skipped, %s\n", opts.Out, how, st.Docs, st.Skipped, st.Elapsed.Round(time.Millisecond))
	return nil
}
