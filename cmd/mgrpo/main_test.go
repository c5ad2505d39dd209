package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the command line and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(context.Background(), append([]string{"mgrpo"}, args...), &out, &errOut, nil, nil)
	return code, out.String(), errOut.String()
}

func TestVersionAndLogFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"version", []string{"--version"}, 0, ""},
		{"bad log level", []string{"--log-level", "loud", "sim", "tasks", "--n", "1"}, 2, `--log-level "loud"`},
		{"bad log format", []string{"--log-format", "xml", "sim", "tasks", "--n", "1"}, 2, `--log-format "xml"`},
		{"json logs", []string{"--log-format", "json", "sim", "tasks", "--n", "1"}, 0, ""},
		{"unknown flag", []string{"sim", "tasks", "--bogus"}, 2, "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.wantErr)
			}
		})
	}
}

func TestSimTasks(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		format  string
		wantKey string
	}{
		{"jsonl", "question"},
		{"gaia", "Final answer"},
		{"webwalkerqa", "root_url"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			path := filepath.Join(dir, tt.format+".jsonl")
			code, _, stderr := runCLI(t, "sim", "tasks", "--seed", "3", "--n", "7", "--out", path, "--format", tt.format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) != 7 {
				t.Fatalf("%d lines, want 7", len(lines))
			}
			for i, line := range lines {
				var row map[string]any
				if err := json.Unmarshal([]byte(line), &row); err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if _, ok := row[tt.wantKey]; !ok {
					t.Errorf("line %d has no %q: %s", i+1, tt.wantKey, line)
				}
			}
		})
	}
	code, _, stderr := runCLI(t, "sim", "tasks", "--format", "csv", "--out", filepath.Join(dir, "x"))
	if code != 2 || !strings.Contains(stderr, "csv") {
		t.Errorf("unknown format: exit %d, stderr %q; want 2 naming the format", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a failed write left its output file behind")
	}
}

func TestSimBadConfigStartsNothing(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--llm", "127.0.0.1:0", "--dialect", "tgi"},
		{"sim", "--llm", "127.0.0.1:0", "--fault-500", "1.5"},
		{"sim", "--llm", "127.0.0.1:0", "--skills", "/nonexistent/skills.json"},
		{"sim", "--llm", "127.0.0.1:0", "--params", "/nonexistent/params.json"},
		{"sim", "--llm", "127.0.0.1:0", "--disable-routes", "render,bogus"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing served (stderr %q)", args, code, stdout, stderr)
		}
	}
}

func TestSimServesUntilCancelled(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code := runMain(ctx, []string{"mgrpo", "sim", "--llm", "127.0.0.1:0", "--web", "127.0.0.1:0", "--trainer", "127.0.0.1:0",
			"--checkpoint-dir", t.TempDir(), "--seed", "5"}, pw, io.Discard, nil, nil)
		pw.Close()
		done <- code
	}()
	urls := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(urls) < 3 && sc.Scan() {
		name, url, _ := strings.Cut(sc.Text(), " ")
		urls[name] = url
	}
	go io.Copy(io.Discard, pr)
	if !strings.HasSuffix(urls["llm"], "/v1") || urls["web"] == "" || urls["trainer"] == "" {
		t.Fatalf("printed %v, want llm …/v1, web and trainer lines", urls)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, u := range []string{strings.TrimSuffix(urls["llm"], "/v1") + "/health", urls["llm"] + "/models", urls["web"] + "/",
		urls["trainer"] + "/api/v1/get_server_capabilities"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim did not stop after cancel")
	}
}
