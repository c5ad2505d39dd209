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
// Pages are server-rendered html/template with one embedded stylesheet; no
// script and nothing fetched from elsewhere. URL paths are stable, to be
// pasted into a bug report:
//
//	/                                   run: curves and steps
//	/curves.svg                         the curves (bench/report.WriteCurves)
//	/step/3                             step 3: its queries and their rollouts
//	/step/3/query/q7                    one query's K rollouts
//	/step/3/query/q7/rollout/2          rollout 2's tree
//	/step/3/sample/planner/12           token view of line 12 (from 0) of planner.jsonl
package view
