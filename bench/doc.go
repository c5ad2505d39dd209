// Package bench holds the benchmark-independent types of the evaluation harness: the common Item that
// every dataset loader produces, the Filter applied to loaded items, and the Result record written to
// results.jsonl, one line per question per run.
//
// Sub-packages: gaia, webwalker, xbench and jsonl load the benchmarks; datasets picks a loader by
// benchmark name; score holds GAIA's official scorer, the LLM judges and the cascade; report computes
// metrics and writes summary.json, report.md and the chart, and compares two eval directories; evalcmd
// holds the library side of the `mgrpo eval score` and `mgrpo eval compare` commands.
package bench
