// Package evalcmd is the library side of the `mgrpo eval` sub-commands that need no agents: score
// (rescore predictions), compare (two eval directories) and report (rewrite summary.json, report.md
// and the chart from results.jsonl). cmd/mgrpo turns flags into the option structs here.
package evalcmd
