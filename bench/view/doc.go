// Package view serves a read-only web page over a run directory as
// `mgrpo rollout --out DIR` writes it: the per-step curves, each step's
// queries with their K rollouts, rollout trees and a token view of every
// sample.
//
// Nothing is loaded up front. Each request reads what it shows: the
// directory listing and summary.jsonl for the run page, and for a step the
// files it needs, indexed once by line offsets (step files never change
// after their directory is renamed into place) so a page reads only the
// lines it displays. Lists are paginated.
//
// A step still being written (a hidden ".step-NNNNNN.tmp-*" directory, or
// a step directory whose summary line is not written yet) is shown as in
// progress, never as an error.
//
// Pages are server-rendered html/template with one embedded stylesheet and
// inline SVG plots (axes fitted to the data, small enough that the step
// table stays on the first screen); no script and nothing fetched from
// elsewhere. URL paths are stable, to be pasted into a bug report:
//
//	/                                   run: curves, steps (with training: loss, versions, staleness, checks)
//	/curves.svg                         the curves as mgrpo report draws them (bench/report.WriteCurves)
//	/search?q=TEXT                      queries of every step whose question, query id or rollout id holds TEXT
//	/step/3                             step 3: histograms, training, its queries and their rollouts
//	/step/3?filter=zerovar&q=TEXT       the same, only queries with failed, invalid, zerovar or drift rollouts
//	/step/3/query/q7                    one query's K rollouts side by side
//	/step/3/query/q7/rollout/2          rollout 2's tree (with previous and next rollout)
//	/step/3/sample/planner/12           token view of line 12 (from 0) of planner.jsonl
//
// The token view groups tokens into spans of one loss mask (a turn's
// completion, or the prompt and tool text between completions) and shows
// each span's text: decoded by Options.Detokenizer when it agrees with
// what the farm kept for the turn, else the text the farm kept (the turn's
// message and tool calls, the tool observations), aligned by order.
package view
