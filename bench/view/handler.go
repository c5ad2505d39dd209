package view

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mgrpo/mgrpo/bench/report"
	"github.com/mgrpo/mgrpo/rollout"
)

//go:embed templates/*.tmpl templates/style.css
var assets embed.FS

// Page sizes.
const (
	stepsPerPage   = 50
	queriesPerPage = 20
	tokensPerPage  = 2048
)

// Handler serves the pages of one run directory. It is safe for concurrent
// use.
type Handler struct {
	dir    string
	name   string
	logger *slog.Logger
	tmpl   *template.Template
	mux    *http.ServeMux
	// det and perToken are Options'.
	det      Detokenizer
	perToken bool

	mu       sync.Mutex
	indexes  map[string]*fileIndex
	order    []string
	sumCache struct {
		size int64
		mod  time.Time
		rows []rollout.StepSummary
	}
}

var _ http.Handler = (*Handler)(nil)

// New returns the handler of the run directory dir. It fails, with an error
// wrapping ErrNotRun that says what was expected, when dir holds neither
// summary.jsonl nor a step directory. logger receives request failures;
// nil discards them.
func New(dir string, logger *slog.Logger) (*Handler, error) {
	return NewWithOptions(dir, Options{Logger: logger})
}

// Options are the handler's optional parts.
type Options struct {
	// Logger receives request failures; nil discards them.
	Logger *slog.Logger
	// Detokenizer decodes the token view's spans; nil shows the text the
	// farm kept for each turn instead.
	Detokenizer Detokenizer
	// PerToken says the detokenizer is cheap (in process), so each token
	// shows its own text, not only each span.
	PerToken bool
}

// NewWithOptions is New with the optional parts.
func NewWithOptions(dir string, o Options) (*Handler, error) {
	logger := o.Logger
	if err := checkRun(dir); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(assets, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("view templates: %w", err)
	}
	h := &Handler{dir: dir, name: filepath.Base(filepath.Clean(dir)), logger: logger, tmpl: tmpl,
		det: o.Detokenizer, perToken: o.PerToken, indexes: map[string]*fileIndex{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.serveRun)
	mux.HandleFunc("GET /curves.svg", h.serveCurves)
	mux.HandleFunc("GET /style.css", serveStyle)
	mux.HandleFunc("GET /search", h.serveSearch)
	mux.HandleFunc("GET /step/{step}", h.serveStep)
	mux.HandleFunc("GET /step/{step}/query/{query}", h.serveQuery)
	mux.HandleFunc("GET /step/{step}/query/{query}/rollout/{k}", h.serveRollout)
	mux.HandleFunc("GET /step/{step}/sample/{role}/{line}", h.serveSample)
	h.mux = mux
	return h, nil
}

// ServeHTTP serves the run's pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"f3": func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) },
	"pct": func(x float64) string {
		return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
	},
	"esc": url.PathEscape,
	// last is the index of a sample's last turn: first + n - 1.
	"last": func(first, n int) int { return first + n - 1 },
	"num":  num,
	"add":  func(a, b int) int { return a + b },
	// dict builds a template argument from key, value pairs.
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, errors.New("dict: odd number of arguments")
		}
		m := make(map[string]any, len(kv)/2)
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
}

// httpError is a failure with the status it is served with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// notFound returns a 404 error with a formatted message.
func notFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

// render executes the named page template with data, or serves err.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name, title string, data any, err error) {
	if err != nil {
		status := http.StatusInternalServerError
		var he *httpError
		if errors.As(err, &he) {
			status = he.status
		} else {
			h.logger.Error("view page failed", "path", r.URL.Path, "err", err)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		h.tmpl.ExecuteTemplate(w, "error", page{Run: h.name, Title: http.StatusText(status), Body: err.Error()})
		return
	}
	var buf bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&buf, name, page{Run: h.name, Title: title, Body: data}); err != nil {
		h.logger.Error("view template failed", "path", r.URL.Path, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// page is what every template receives: the layout's fields and the page's
// own data in Body.
type page struct {
	Run   string
	Title string
	Body  any
}

func serveStyle(w http.ResponseWriter, r *http.Request) {
	b, _ := assets.ReadFile("templates/style.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Write(b)
}

// pager is one page of a list.
type pager struct {
	Page, Pages, Total, From, To int
	PrevURL, NextURL             string
}

// paginate returns the [from, to) bounds of page ?page=N (from 1) of a list
// of total items, per items a page, with links built from base.
func paginate(r *http.Request, base string, total, per int) pager {
	pages := max(1, (total+per-1)/per)
	p, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p = min(max(p, 1), pages)
	pg := pager{Page: p, Pages: pages, Total: total, From: (p - 1) * per, To: min(p*per, total)}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if p > 1 {
		pg.PrevURL = base + sep + "page=" + strconv.Itoa(p-1)
	}
	if p < pages {
		pg.NextURL = base + sep + "page=" + strconv.Itoa(p+1)
	}
	return pg
}

// runPage is the run page's data.
type runPage struct {
	Steps      []runRow
	Pager      pager
	Done       int
	InProgress int
	// Usage is the cost meter's total over the run's written steps.
	Usage rollout.Usage
	// Plots are the per-step curves of the written steps.
	Plots []template.HTML
	// Training says some step was trained (mgrpo train): the table shows
	// its columns.
	Training bool
	// AllFailed lists the steps whose rollouts all failed.
	AllFailed []int
}

// runRow is one row of the run page's step table.
type runRow struct {
	stepEntry
	AllFailed bool
	Training  []trainingRow
	Checks    int
}

// allFailed reports whether every rollout of a written step failed.
func allFailed(s *rollout.StepSummary) bool {
	return s != nil && s.Rollouts > 0 && s.FailedRollouts >= s.Rollouts
}

// runPlots draws the curves of the run page from the written steps'
// summaries: rewards, accuracy and response length, and the planner's loss
// per token for a training run.
func runPlots(steps []stepEntry) (plots []template.HTML, training bool) {
	var xs []int
	var reward, acc, sub, length, loss []float64
	var lossXs []int
	for _, s := range steps {
		if s.Summary == nil {
			continue
		}
		sum := s.Summary
		xs = append(xs, s.Step)
		reward, acc, sub = append(reward, sum.MeanMainReward), append(acc, sum.Accuracy), append(sub, sum.MeanSubReward)
		length = append(length, sum.ResponseTokens["planner"].Mean+sum.ResponseTokens["single"].Mean)
		if len(sum.Training) > 0 {
			training = true
			for _, row := range trainingRows(sum)[:1] {
				if row.HasLoss {
					lossXs, loss = append(lossXs, s.Step), append(loss, row.LossPerToken)
				}
			}
		}
	}
	if len(xs) == 0 {
		return nil, training
	}
	plots = []template.HTML{
		linePlot("plot-reward", "mean main reward R_M", xs, reward),
		linePlot("plot-accuracy", "accuracy", xs, acc),
		linePlot("plot-subreward", "mean sub reward R_S", xs, sub),
		linePlot("plot-length", "planner response tokens (mean)", xs, length),
	}
	if len(loss) > 0 {
		plots = append(plots, linePlot("plot-loss", "planner loss per token", lossXs, loss))
	}
	return plots, training
}

func (h *Handler) serveRun(w http.ResponseWriter, r *http.Request) {
	steps, err := h.listSteps()
	var p runPage
	if err == nil {
		for _, s := range steps {
			if s.State == StateDone {
				p.Done++
				p.Usage.Add(s.Summary.Usage)
			} else {
				p.InProgress++
			}
		}
		for _, s := range steps {
			if allFailed(s.Summary) {
				p.AllFailed = append(p.AllFailed, s.Step)
			}
		}
		p.Plots, p.Training = runPlots(steps)
		p.Pager = paginate(r, "/", len(steps), stepsPerPage)
		for _, s := range steps[p.Pager.From:p.Pager.To] {
			row := runRow{stepEntry: s, AllFailed: allFailed(s.Summary), Training: trainingRows(s.Summary)}
			row.Checks = checksFailed(row.Training)
			p.Steps = append(p.Steps, row)
		}
	}
	h.render(w, r, "run", "run "+h.name, p, err)
}

func (h *Handler) serveCurves(w http.ResponseWriter, r *http.Request) {
	sums, err := h.summaries()
	if err == nil && len(sums) == 0 {
		err = notFound("no step has a summary line yet")
	}
	var buf bytes.Buffer
	if err == nil {
		err = report.WriteCurves(&buf, []report.RunCurve{{Name: h.name, Steps: sums}})
	}
	if err != nil {
		h.render(w, r, "", "", nil, err)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Write(buf.Bytes())
}

// stepOf resolves the {step} path value to a listed step.
func (h *Handler) stepOf(r *http.Request) (stepEntry, error) {
	n, err := strconv.Atoi(r.PathValue("step"))
	if err != nil || n < 0 {
		return stepEntry{}, notFound("step %q: not a step number", r.PathValue("step"))
	}
	steps, err := h.listSteps()
	if err != nil {
		return stepEntry{}, err
	}
	for _, s := range steps {
		if s.Step == n {
			return s, nil
		}
	}
	return stepEntry{}, notFound("step %d: no such step in %s (steps so far: %d)", n, h.name, len(steps))
}

// stepFile is the path of a file of step n.
func (h *Handler) stepFile(n int, name string) string {
	return filepath.Join(rollout.StepDir(h.dir, n), name)
}
