package evalrun

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/bench"
	"github.com/mgrpo/mgrpo/bench/report"
)

// ErrNarrower marks an eval whose questions or runs leave out pairs that
// its directory's results.jsonl holds: its report would cover less than
// the directory did (another --limit, --ids, --level, --text-only or fewer
// --runs), so it is refused unless Config.Replace asks for it.
var ErrNarrower = errors.New("the eval directory holds results these settings leave out")

// CheckDir refuses, wrapping ErrNarrower, an eval whose report would
// leave out results its directory holds, unless cfg.Replace is set. It
// only reads the directory; a missing or unreadable results.jsonl passes
// (Run reports what is wrong with it). Run makes the same check: CheckDir
// lets a caller refuse before it starts anything.
func CheckDir(cfg Config) error {
	if cfg.Replace {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(cfg.Out, report.ResultsFile))
	if err != nil {
		return nil
	}
	prior, err := bench.ReadResults(bytes.NewReader(data[:bytes.LastIndexByte(data, '\n')+1]), report.ResultsFile)
	if err != nil {
		return nil
	}
	return narrower(cfg, prior)
}

// narrower is CheckDir's test over the results found.
func narrower(cfg Config, prior []bench.Result) error {
	if cfg.Replace || len(prior) == 0 {
		return nil
	}
	runs := max(cfg.Runs, 1)
	ours := make(map[string]bool, len(cfg.Items))
	for _, it := range cfg.Items {
		ours[it.ID] = true
	}
	outside := map[pairID]bool{}
	questions, maxRun := map[string]bool{}, 0
	for _, r := range prior {
		questions[r.ID] = true
		maxRun = max(maxRun, r.Run+1)
		if !ours[r.ID] || r.Run < 0 || r.Run >= runs {
			outside[pairID{r.ID, r.Run}] = true
		}
	}
	if len(outside) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s holds results of %d question(s) × %d run(s), and these settings select %d question(s) × %d run(s): the report would leave out %d recorded pair(s) (was --limit, --ids, --level, --text-only or --runs changed?); write this eval to a new --out, or add --replace to rewrite the report for these settings (results.jsonl keeps every line)",
		ErrNarrower, filepath.Join(cfg.Out, report.ResultsFile), len(questions), maxRun, len(cfg.Items), runs, len(outside))
}
