package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mgrpo/mgrpo/bench"
)

// File names inside an eval directory.
const (
	ResultsFile = "results.jsonl"
	SummaryFile = "summary.json"
	ReportFile  = "report.md"
	ChartFile   = "accuracy.svg"
)

// WriteDir reads dir/results.jsonl and writes summary.json, report.md and accuracy.svg next to it.
// It returns the summary.
func WriteDir(dir string) (Summary, error) {
	results, err := bench.ReadResultsFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return Summary{}, err
	}
	s := Summarize(results)
	return s, WriteFiles(dir, s)
}

// WriteFiles writes summary.json, report.md and accuracy.svg for s into dir.
func WriteFiles(dir string, s Summary) error {
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	var md, svg bytes.Buffer
	if err := WriteMarkdown(&md, s, ChartFile); err != nil {
		return err
	}
	if err := WriteSVG(&svg, s); err != nil {
		return err
	}
	for name, body := range map[string][]byte{SummaryFile: append(js, '\n'), ReportFile: md.Bytes(), ChartFile: svg.Bytes()} {
		if err := writeAtomic(filepath.Join(dir, name), body); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes through a temporary file and a rename, so readers never see half a report.
func writeAtomic(path string, body []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(body); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
