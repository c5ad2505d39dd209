package web

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// PlaceholderBaseURL is the base of every URL written into task files.
// Files are written before any server address is known; a served world
// serves the same paths, so a consumer maps a task URL to a live one by
// replacing this prefix with the server's base URL (see Rebase).
const PlaceholderBaseURL = "http://web.sim"

// TaskFormats lists the formats WriteTasks accepts.
var TaskFormats = []string{"jsonl", "gaia", "webwalkerqa"}

// Rebase replaces the PlaceholderBaseURL prefix of u with base (e.g.
// "http://127.0.0.1:8080"); other URLs are returned unchanged.
func Rebase(u, base string) string {
	if rest, ok := strings.CutPrefix(u, PlaceholderBaseURL); ok {
		return strings.TrimSuffix(base, "/") + rest
	}
	return u
}

// WriteTasks writes qs to out as JSON Lines in one of TaskFormats:
//
//   - "jsonl": the project's generic task format, {"id", "question",
//     "answer", "metadata": {hops, type, difficulty, lang, domain, site,
//     root_url, evidence, golden_path, chain}};
//   - "gaia": GAIA's metadata.jsonl layout, {"task_id", "Question", "Level",
//     "Final answer", "file_name", "Annotator Metadata"}, Level being the
//     hop count;
//   - "webwalkerqa": the lowercase hub layout, {"question", "answer",
//     "root_url", "info": {type, difficulty_level, lang, domain,
//     source_website, golden_path}}.
//
// URLs are written under PlaceholderBaseURL. An unknown format is an error
// naming the valid ones.
func WriteTasks(out io.Writer, qs []Question, format string) error {
	var row func(Question) any
	switch format {
	case "jsonl":
		row = genericTask
	case "gaia":
		row = gaiaTask
	case "webwalkerqa":
		row = webwalkerTask
	default:
		return fmt.Errorf("write tasks: unknown format %q (want one of %s)", format, strings.Join(TaskFormats, ", "))
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, q := range qs {
		if err := enc.Encode(row(q)); err != nil {
			return fmt.Errorf("write tasks: %w", err)
		}
	}
	return nil
}

func evidenceURLs(q Question) []string {
	urls := make([]string, len(q.EvidencePaths))
	for i, p := range q.EvidencePaths {
		urls[i] = PlaceholderBaseURL + p
	}
	return urls
}

type genericMeta struct {
	Hops       int      `json:"hops"`
	Type       string   `json:"type"`
	Difficulty string   `json:"difficulty"`
	Lang       string   `json:"lang"`
	Domain     string   `json:"domain"`
	Site       string   `json:"site"`
	RootURL    string   `json:"root_url"`
	Evidence   []string `json:"evidence"`
	GoldenPath []string `json:"golden_path"`
	Chain      Chain    `json:"chain"`
}

type genericRow struct {
	ID       string      `json:"id"`
	Question string      `json:"question"`
	Answer   string      `json:"answer"`
	Metadata genericMeta `json:"metadata"`
}

func genericTask(q Question) any {
	return genericRow{ID: q.ID, Question: q.Question, Answer: q.Answer, Metadata: genericMeta{
		Hops: q.Hops, Type: q.Type, Difficulty: q.Difficulty, Lang: q.Lang, Domain: q.Domain,
		Site: q.Site, RootURL: PlaceholderBaseURL + q.RootPath, Evidence: evidenceURLs(q),
		GoldenPath: q.GoldenPaths, Chain: q.Chain,
	}}
}

type gaiaAnnotator struct {
	Steps         string `json:"Steps"`
	NumberOfSteps string `json:"Number of steps"`
	HowLong       string `json:"How long did this take?"`
	Tools         string `json:"Tools"`
	NumberOfTools string `json:"Number of tools"`
}

type gaiaRow struct {
	TaskID      string        `json:"task_id"`
	Question    string        `json:"Question"`
	Level       int           `json:"Level"`
	FinalAnswer string        `json:"Final answer"`
	FileName    string        `json:"file_name"`
	Annotator   gaiaAnnotator `json:"Annotator Metadata"`
}

// gaiaTask writes the annotator's steps as GAIA does: a numbered list of
// what a person would do, here one find-and-read step per hop.
func gaiaTask(q Question) any {
	steps := make([]string, len(q.Chain.Relations))
	for i := range steps {
		partial := Chain{Entity: q.Chain.Entity, Relations: q.Chain.Relations[:i+1]}
		steps[i] = strconv.Itoa(i+1) + ". " + SubtaskText(partial) + " Source: " + PlaceholderBaseURL + q.EvidencePaths[i]
	}
	return gaiaRow{
		TaskID: q.ID, Question: q.Question, Level: min(max(q.Hops, 1), 3), FinalAnswer: q.Answer,
		Annotator: gaiaAnnotator{
			Steps: strings.Join(steps, "\n"), NumberOfSteps: strconv.Itoa(len(steps)), HowLong: "",
			Tools: "web browser, search engine", NumberOfTools: "2",
		},
	}
}

type webwalkerInfo struct {
	Type            string   `json:"type"`
	DifficultyLevel string   `json:"difficulty_level"`
	Lang            string   `json:"lang"`
	Domain          string   `json:"domain"`
	SourceWebsite   []string `json:"source_website"`
	GoldenPath      []string `json:"golden_path"`
}

type webwalkerRow struct {
	Question string        `json:"question"`
	Answer   string        `json:"answer"`
	RootURL  string        `json:"root_url"`
	Info     webwalkerInfo `json:"info"`
}

func webwalkerTask(q Question) any {
	return webwalkerRow{Question: q.Question, Answer: q.Answer, RootURL: PlaceholderBaseURL + q.RootPath,
		Info: webwalkerInfo{
			Type: q.Type, DifficultyLevel: q.Difficulty, Lang: q.Lang, Domain: q.Domain,
			SourceWebsite: evidenceURLs(q), GoldenPath: q.GoldenPaths,
		}}
}
