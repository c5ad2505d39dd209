package corpus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mgrpo/mgrpo/internal/httpserve"
)

// retrieveRequest is Search-R1's POST /retrieve body.
type retrieveRequest struct {
	Queries      []string `json:"queries"`
	TopK         *int     `json:"topk"`
	ReturnScores bool     `json:"return_scores"`
}

// retrieveDoc is one document of a /retrieve answer; url is this
// project's addition, sent only for documents that have one.
type retrieveDoc struct {
	ID       string `json:"id"`
	URL      string `json:"url,omitempty"`
	Contents string `json:"contents"`
}

type scoredDoc struct {
	Document retrieveDoc `json:"document"`
	Score    float64     `json:"score"`
}

// Limits of one /retrieve request.
const (
	maxQueries     = 512
	maxTopK        = 1000
	maxRequestBody = 4 << 20
)

// Handler serves Search-R1's retrieval API over ix: POST /retrieve
// {"queries": [...], "topk": k, "return_scores": bool} answers
// {"result": [[{"document": {"id", "contents"}, "score"}, …], …]} (one list
// per query; bare documents when return_scores is false), and GET /health
// answers {"status": "ok", "documents": n}. defaultTopK applies when topk
// is absent.
func Handler(ix *Index, defaultTopK int) http.Handler {
	if defaultTopK <= 0 {
		defaultTopK = 3
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /retrieve", func(w http.ResponseWriter, r *http.Request) {
		var req retrieveRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, maxRequestBody))
		if err := dec.Decode(&req); err != nil {
			writeDetail(w, http.StatusUnprocessableEntity, "body is not a retrieve request: "+err.Error())
			return
		}
		if len(req.Queries) == 0 || len(req.Queries) > maxQueries {
			writeDetail(w, http.StatusUnprocessableEntity, fmt.Sprintf("queries must hold 1 to %d strings", maxQueries))
			return
		}
		k := defaultTopK
		if req.TopK != nil {
			k = *req.TopK
		}
		if k < 1 || k > maxTopK {
			writeDetail(w, http.StatusUnprocessableEntity, fmt.Sprintf("topk must be within 1..%d", maxTopK))
			return
		}
		result := make([]any, len(req.Queries))
		for i, q := range req.Queries {
			hits, err := ix.Search(r.Context(), q, k)
			if err != nil {
				writeDetail(w, http.StatusInternalServerError, "search failed")
				return
			}
			if req.ReturnScores {
				docs := make([]scoredDoc, len(hits))
				for j, h := range hits {
					docs[j] = scoredDoc{Document: retrieveDoc{ID: h.ID, URL: h.URL, Contents: h.Contents()}, Score: h.Score}
				}
				result[i] = docs
			} else {
				docs := make([]retrieveDoc, len(hits))
				for j, h := range hits {
					docs[j] = retrieveDoc{ID: h.ID, URL: h.URL, Contents: h.Contents()}
				}
				result[i] = docs
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"result": result})
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		n, err := ix.Count()
		if err != nil {
			writeDetail(w, http.StatusInternalServerError, "index unavailable")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "documents": n})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

// ServeConfig configures Serve.
type ServeConfig struct {
	// Index is the index directory.
	Index string
	// Listen is the address to listen on, e.g. "127.0.0.1:8000".
	Listen string
	// TopK is the default number of hits when a request gives none.
	TopK int
	// Logger receives start and stop lines; nil means slog.Default().
	Logger *slog.Logger
	// Ready, when set, receives the bound address once listening.
	Ready func(addr string)
	// Limits bound the server's connections; the zero value means
	// httpserve.Short() without its body cap (the handler reads at most
	// 4 MiB of a query).
	Limits httpserve.Limits
}

// Serve opens the index and serves Handler on cfg.Listen until ctx ends,
// then shuts down gracefully.
func Serve(ctx context.Context, cfg ServeConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ix, err := Open(cfg.Index)
	if err != nil {
		return err
	}
	defer ix.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("corpus serve: %w", err)
	}
	n, _ := ix.Count()
	limits := cfg.Limits
	if limits == (httpserve.Limits{}) {
		limits = httpserve.Short()
		limits.MaxBodyBytes = 0
	}
	srv := limits.Server(Handler(ix, cfg.TopK))
	log.Info("corpus serve", "addr", ln.Addr().String(), "index", cfg.Index, "documents", n)
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("corpus serve: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("corpus serve shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("corpus serve: %w", err)
	}
	log.Info("corpus serve stopped")
	return nil
}
