package oneshot

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	flagBin         = flag.String("oneshot.bin", "", "the mgrpo binary to measure (default: built from ../../cmd/mgrpo)")
	flagQuestions   = flag.Int("oneshot.questions", 40, "questions of the step")
	flagGroup       = flag.Int("oneshot.group", 4, "rollouts per question")
	flagLatency     = flag.Duration("oneshot.latency", 20*time.Millisecond, "the fake chat server's time per completion")
	flagConcurrency = flag.Int("oneshot.concurrency", 64, "rollouts in flight (mgrpo's --concurrency, the Python loop's threads)")
	flagSides       = flag.String("oneshot.sides", "python,go,go-nostore", "the sides to run, alternated in each iteration")
	flagKeep        = flag.String("oneshot.keep", "", "keep each side's output under this directory (default: removed)")
	flagEnv         = flag.String("oneshot.env", "", "extra environment of the mgrpo process, comma-separated K=V (e.g. MGRPO_CPUPROFILE=/tmp/p.out)")
)

// sideResult is one run of one side.
type sideResult struct {
	cpu, start, run, end time.Duration
	sys                  time.Duration // the system part of cpu
	calls                int64
	wall                 time.Duration
	rss                  int64
	// faults are minor page faults, switches voluntary and involuntary
	// context switches (a thread that sleeps and is woken, or is preempted).
	faults, switches int64
	// conns are the connections it opened to the servers.
	conns int64
}

// BenchmarkOneShot runs, in each iteration and in an order that rotates, the
// built mgrpo binary with its default store, the same with --store none, and
// the project's Python loop (loop.py), each as a process running one step of
// questions × group rollouts against the same fake servers (in this
// process), and reports each side's CPU per model call (user + system from
// getrusage of the child, divided by the chat completions the server
// answered it) and, for mgrpo, where it goes: before its first request, from
// it to its last answer (per call), after it. Medians over the iterations.
func BenchmarkOneShot(b *testing.B) {
	sides := strings.Split(*flagSides, ",")
	python, err := interpreter()
	if err != nil {
		b.Logf("the Python side is skipped: %v", err)
		sides = slices.DeleteFunc(sides, func(s string) bool { return s == "python" })
	}
	bin := *flagBin
	if bin == "" {
		bin = buildMgrpo(b)
	}
	var phases Phases
	web := &Web{Hooks: phases.Hooks()}
	var conns atomic.Int64
	countConns := func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	webSrv := httptest.NewUnstartedServer(web)
	webSrv.Config.ConnState = countConns
	webSrv.Start()
	defer webSrv.Close()
	web.URL = webSrv.URL
	chat := &Chat{Models: []string{"planner", "executor"}, WebURL: webSrv.URL, Latency: *flagLatency, Hooks: phases.Hooks()}
	chatSrv := httptest.NewUnstartedServer(chat)
	chatSrv.Config.ConnState = countConns
	chatSrv.Start()
	defer chatSrv.Close()
	dir := b.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	if err := WriteTasks(tasks, Tasks(*flagQuestions)); err != nil {
		b.Fatal(err)
	}
	webHost := strings.TrimPrefix(webSrv.URL, "http://")
	results := map[string][]sideResult{}
	run := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range sides {
			side := sides[(i+j)%len(sides)]
			run++
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", side, run))
			if *flagKeep != "" {
				out = filepath.Join(*flagKeep, fmt.Sprintf("%s-%d", side, run))
			}
			var cmd *exec.Cmd
			switch side {
			case "python":
				cmd = exec.Command(python, "loop.py", "--chat", chatSrv.URL+"/v1", "--web", webSrv.URL, "--tasks", tasks,
					"--group-size", strconv.Itoa(*flagGroup), "--concurrency", strconv.Itoa(*flagConcurrency), "--out", out+".jsonl")
			case "go", "go-nostore":
				args := []string{"rollout", "--tasks", tasks, "--out", out, "--steps", "1",
					"--batch-size", strconv.Itoa(*flagQuestions), "--group-size", strconv.Itoa(*flagGroup),
					"--concurrency", strconv.Itoa(*flagConcurrency),
					"--planner-url", chatSrv.URL + "/v1", "--planner-model", "planner",
					"--executor-url", chatSrv.URL + "/v1", "--executor-model", "executor",
					"--search-provider", "serper", "--search-url", webSrv.URL, "--allow-host", webHost,
					"--log-level", "warn"}
				if side == "go-nostore" {
					args = append(args, "--store", "none")
				}
				cmd = exec.Command(bin, args...)
				cmd.Env = append(os.Environ(), "SERPER_API_KEY=bench")
				if *flagEnv != "" {
					for _, kv := range strings.Split(*flagEnv, ",") {
						cmd.Env = append(cmd.Env, strings.ReplaceAll(kv, "{run}", strconv.Itoa(run)))
					}
				}
			default:
				b.Fatalf("unknown side %q (want python, go or go-nostore)", side)
			}
			conns0 := conns.Load()
			r := runSide(b, cmd, chat, &phases)
			r.conns = conns.Load() - conns0
			results[side] = append(results[side], r)
			if *flagKeep == "" {
				os.RemoveAll(out)
				os.Remove(out + ".jsonl")
			}
		}
	}
	b.StopTimer()
	report(b, sides, results)
}

// interpreter returns the python3 that PATH leads to, resolved to the
// interpreter itself: a version manager's shim (pyenv's is a shell script)
// would add its own start-up to the Python side's CPU.
func interpreter() (string, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("python3 is not on PATH")
	}
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return "", fmt.Errorf("%s does not run: %w", python, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// runSide runs cmd to its end and measures it.
func runSide(b *testing.B, cmd *exec.Cmd, chat *Chat, phases *Phases) sideResult {
	b.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	calls0 := chat.Calls()
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	phases.Watch(cmd.Process.Pid)
	err := cmd.Wait()
	wall := time.Since(t0)
	if err != nil {
		b.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmd.Args[0], err, tail(stdout.String()), tail(stderr.String()))
	}
	st := cmd.ProcessState
	r := sideResult{cpu: st.UserTime() + st.SystemTime(), sys: st.SystemTime(), calls: chat.Calls() - calls0, wall: wall}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		r.rss = int64(ru.Maxrss) * 1024
		r.faults, r.switches = int64(ru.Minflt), int64(ru.Nvcsw+ru.Nivcsw)
	}
	start, run, end, perr := phases.Split(r.cpu)
	phases.Watch(0)
	if perr != nil {
		b.Fatal(perr)
	}
	r.start, r.run, r.end = start, run, end
	return r
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// buildMgrpo builds cmd/mgrpo into a temporary directory.
func buildMgrpo(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "mgrpo")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "../../cmd/mgrpo")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build mgrpo: %v\n%s", err, out)
	}
	return bin
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(b *testing.B, sides []string, results map[string][]sideResult) {
	perCall := map[string]float64{}
	for _, side := range sides {
		rs := results[side]
		var cpu, sys, start, run, end, wall, rss, calls, faults, switches, conns []float64
		for _, r := range rs {
			cpu = append(cpu, float64(r.cpu.Microseconds())/float64(r.calls))
			sys = append(sys, 100*float64(r.sys)/float64(r.cpu))
			start = append(start, float64(r.start.Microseconds())/1000)
			run = append(run, float64(r.run.Microseconds())/float64(r.calls))
			end = append(end, float64(r.end.Microseconds())/1000)
			wall = append(wall, r.wall.Seconds())
			rss = append(rss, float64(r.rss)/(1<<20))
			calls = append(calls, float64(r.calls))
			conns = append(conns, float64(r.conns))
			faults = append(faults, float64(r.faults)/float64(r.calls))
			switches = append(switches, float64(r.switches)/float64(r.calls))
		}
		perCall[side] = median(cpu)
		b.ReportMetric(median(cpu), side+"-µs/call")
		b.Logf("%-10s CPU/call %6.0f µs (runs: %v, %.0f%% system)  start-up %5.1f ms  per call (first request → last answer) %6.0f µs  end %5.1f ms  wall %.2f s  calls %.0f  peak RSS %.0f MiB  page faults %.1f and context switches %.1f a call  connections %.0f",
			side, median(cpu), rounded(cpu), median(sys), median(start), median(run), median(end), median(wall), median(calls), median(rss), median(faults), median(switches), median(conns))
	}
	if py, ok := perCall["python"]; ok {
		for _, side := range []string{"go", "go-nostore"} {
			if g, ok := perCall[side]; ok && g > 0 {
				b.ReportMetric(py/g, "python/"+side)
			}
		}
	}
}

func rounded(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}
