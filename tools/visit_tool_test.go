package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/internal/failure"
	"github.com/mgrpo/mgrpo/tools/cache"
	"github.com/mgrpo/mgrpo/tools/ssrf"
	"github.com/mgrpo/mgrpo/tools/visit"
)

func visitTool(tb testing.TB, cfg VisitConfig, allow ...string) *VisitTool {
	tb.Helper()
	g, err := ssrf.New(ssrf.Config{Allow: allow})
	if err != nil {
		tb.Fatal(err)
	}
	f, err := visit.New(visit.Config{Guard: g, Timeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Fetcher = f
	vt, err := NewVisit(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return vt
}

type failingSummarizer struct{ calls atomic.Int32 }

func (s *failingSummarizer) Summarize(context.Context, string, string) (visit.Extraction, error) {
	s.calls.Add(1)
	return visit.Extraction{}, errors.New("model unavailable")
}

type echoSummarizer struct{}

func (echoSummarizer) Summarize(_ context.Context, goal, content string) (visit.Extraction, error) {
	return visit.Extraction{Evidence: content[:10], Summary: "about " + goal}, nil
}

func TestVisitTool(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>Page %s</title></head><body><nav>Menu Home About</nav><article><h1>Heading</h1><p>%s</p></article><footer>Copyright</footer></body></html>",
			r.URL.Path, strings.Repeat("Evidence sentence about the topic. ", 200))
	}))
	defer srv.Close()
	allow := srv.Listener.Addr().String()

	t.Run("budget", func(t *testing.T) {
		vt := visitTool(t, VisitConfig{Budget: 1000}, allow)
		o := vt.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"url":[%q,%q],"goal":"topic"}`, srv.URL+"/a", srv.URL+"/b")))
		if o.Meta.Class != failure.ClassOK || len([]rune(o.Text)) > 1000+len("\n=======\n")+2 {
			t.Fatalf("meta %+v, %d runes", o.Meta, len([]rune(o.Text)))
		}
		if !strings.Contains(o.Text, "Evidence sentence") || !strings.Contains(o.Text, "[Page truncated") {
			t.Errorf("text = %q", o.Text)
		}
	})
	t.Run("refused-is-observation", func(t *testing.T) {
		vt := visitTool(t, VisitConfig{})
		o := vt.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"url":[%q, "http://169.254.169.254/"],"goal":"x"}`, srv.URL+"/a")))
		if o.Meta.Class != failure.ClassRefused || !o.Meta.Failed() || !strings.Contains(o.Text, "refused by SSRF guard") {
			t.Errorf("obs = %+v", o)
		}
	})
	t.Run("summarizer-fallback", func(t *testing.T) {
		s := &failingSummarizer{}
		vt := visitTool(t, VisitConfig{Summarizer: s, Budget: 500}, allow)
		o := vt.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"url":[%q],"goal":"topic"}`, srv.URL+"/c")))
		if o.Meta.Class != failure.ClassOK || s.calls.Load() != 3 || !strings.Contains(o.Text, "Content of") {
			t.Errorf("calls %d, obs %+v", s.calls.Load(), o)
		}
	})
	t.Run("summarizer", func(t *testing.T) {
		vt := visitTool(t, VisitConfig{Summarizer: echoSummarizer{}}, allow)
		o := vt.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"url":[%q],"goal":"topic"}`, srv.URL+"/d")))
		if !strings.Contains(o.Text, "Summary:\nabout topic") || !strings.Contains(o.Text, "Evidence in page:") {
			t.Errorf("text = %q", o.Text)
		}
	})
	t.Run("singleflight", func(t *testing.T) {
		vt := visitTool(t, VisitConfig{Cache: cache.NewLRU(10, time.Hour)}, allow)
		before := hits.Load()
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = vt.Call(context.Background(), json.RawMessage(fmt.Sprintf(`{"url":[%q],"goal":"g"}`, srv.URL+"/same")))
			}()
		}
		wg.Wait()
		if got := hits.Load() - before; got != 1 {
			t.Errorf("site saw %d fetches of one URL, want 1", got)
		}
	})
}

// FuzzClipRunes checks clipRunes against cutting the rune slice.
func FuzzClipRunes(f *testing.F) {
	f.Add("short", 10, "…")
	f.Add("exactly ten", 11, " [cut]")
	f.Add("héllo wörld, 東京 and more", 9, " [cut]")
	f.Add("bad \xff\xfe bytes here", 6, "!")
	f.Add("note longer than budget", 3, " [truncated]")
	f.Fuzz(func(t *testing.T, s string, n int, note string) {
		if n < 0 || n > 1<<16 {
			return
		}
		want := s
		if r := []rune(s); len(r) > n {
			want = string(r[:max(n-len([]rune(note)), 0)]) + note
		}
		if got := clipRunes(s, n, note); got != want {
			t.Fatalf("clipRunes(%q, %d, %q) = %q, want %q", s, n, note, got, want)
		}
	})
}
