package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mgrpo/mgrpo/rollout"
	simllm "github.com/mgrpo/mgrpo/sim/llm"
	"github.com/mgrpo/mgrpo/trainer_bridge/httptrainer/reference"
)

// trainArgs are the arguments of a `mgrpo train` run on the sim's SGLang
// dialect, trained by the reference trainer at url.
func trainArgs(out, url, mode string, steps int, extra ...string) []string {
	args := []string{"train", "--sim", "--dialect", "sglang", "--out", out, "--run", "train-test", "--mode", mode,
		"--steps", strconv.Itoa(steps), "--batch-size", "2", "--group-size", "2", "--concurrency", "4",
		"--planner-trainer", url, "--base-model-planner", "sim-base", "--weight-sync", "sglang",
		"--weights-path", "/ckpt/{role}/step-{step}"}
	if mode == string(rollout.ModeMGRPO) {
		args = append(args, "--executor-trainer", url, "--base-model-executor", "sim-base")
	}
	return append(args, extra...)
}

// referenceTrainer serves the reference trainer (base model sim-base) for
// the test and returns it with its URL.
func referenceTrainer(t *testing.T) (*reference.Server, string) {
	t.Helper()
	ref := reference.New(reference.Config{BaseModels: []string{"sim-base"}})
	srv := httptest.NewServer(ref)
	t.Cleanup(srv.Close)
	return ref, srv.URL
}

// checkTrainedRun checks a trained run's steps: step t sampled with the
// versions step t-1's training produced (the reference trainer answers
// version = step), its turns were answered by servers on those weights,
// and its training is recorded.
func checkTrainedRun(t *testing.T, out string, steps int, roles []rollout.Role) {
	t.Helper()
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil || len(sums) != steps {
		t.Fatalf("summary.jsonl: %d steps, %v; want %d", len(sums), err, steps)
	}
	for _, sum := range sums {
		want := int64(sum.Step - 1)
		for _, role := range roles {
			rec, ok := sum.Training[string(role)]
			if !ok || rec.PreviousVersion != want || rec.Version != want+1 || rec.Samples == 0 {
				t.Errorf("step %d: %s training %+v; want version %d → %d", sum.Step, role, rec, want, want+1)
			}
		}
		dir := rollout.StepDir(out, sum.Step)
		planner, err := rollout.ReadSamplesJSONL(filepath.Join(dir, rollout.PlannerFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range planner {
			if s.PolicyVersion != want {
				t.Fatalf("step %d: a planner sample of policy version %d, want %d", sum.Step, s.PolicyVersion, want)
			}
		}
		if len(roles) == 2 {
			executor, _ := rollout.ReadSamplesJSONL(filepath.Join(dir, rollout.ExecutorFile))
			for _, s := range executor {
				if s.PolicyVersion != want {
					t.Fatalf("step %d: an executor sample of policy version %d, want %d", sum.Step, s.PolicyVersion, want)
				}
			}
		}
		// The servers answered with the weights the samples claim: the
		// sync came before the step's rollouts.
		served := "default"
		if want > 0 {
			served = strconv.FormatInt(want, 10)
		}
		seen := 0
		for _, line := range readLines(t, filepath.Join(dir, rollout.RolloutsFile)) {
			for _, v := range weightVersions(line) {
				seen++
				if v != served {
					t.Fatalf("step %d: a turn served by weight version %q, want %q", sum.Step, v, served)
				}
			}
		}
		if seen == 0 {
			t.Fatalf("step %d: no turn records the weight version that served it", sum.Step)
		}
	}
}

// weightVersions returns the weight_version values of a rollouts.jsonl line.
func weightVersions(line string) []string {
	var out []string
	for _, part := range strings.Split(line, `"weight_version":"`)[1:] {
		if i := strings.IndexByte(part, '"'); i >= 0 {
			out = append(out, part[:i])
		}
	}
	return out
}

func TestTrainModes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains against the sim")
	}
	for _, tc := range []struct {
		mode  rollout.Mode
		roles []rollout.Role
	}{
		{rollout.ModeMGRPO, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor}},
		{rollout.ModeFrozenSub, []rollout.Role{rollout.RolePlanner}},
		{rollout.ModeSingle, []rollout.Role{rollout.RolePlanner}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			ref, trainerURL := referenceTrainer(t)
			out := filepath.Join(t.TempDir(), "out")
			code, stdout, stderr := runCLI(t, trainArgs(out, trainerURL, string(tc.mode), 3)...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "trained: planner v0→v1 (") || !strings.Contains(stdout, "loss") {
				t.Errorf("the step table shows no training:\n%s", stdout)
			}
			checkTrainedRun(t, out, 3, tc.roles)
			if got := len(ref.Steps()); got != 3*len(tc.roles) {
				t.Errorf("the trainer trained %d batches, want %d", got, 3*len(tc.roles))
			}
			for _, s := range ref.Steps() {
				if s.Role == rollout.RoleExecutor && tc.mode != rollout.ModeMGRPO {
					t.Errorf("mode %s trained the executors", tc.mode)
				}
			}
		})
	}
}

// TestTrainVLLMSync trains against the sim's vLLM dialect: the sync pauses
// each server, calls the update route, resets the prefix cache, resumes
// and verifies the version.
func TestTrainVLLMSync(t *testing.T) {
	if testing.Short() {
		t.Skip("trains against the sim")
	}
	_, trainerURL := referenceTrainer(t)
	out := filepath.Join(t.TempDir(), "out")
	args := trainArgs(out, trainerURL, "mgrpo", 3, "--weight-update-path", "/sim/update_weights",
		"--weight-update-body", `{"model_path": "{path}", "weight_version": "{version}"}`, "--weight-version-path", "/weight_info")
	for i, a := range args {
		switch {
		case a == "sglang" && args[i-1] == "--dialect":
			args[i] = "vllm"
		case a == "sglang" && args[i-1] == "--weight-sync":
			args[i] = "vllm"
		}
	}
	code, _, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	checkTrainedRun(t, out, 3, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor})
	code, _, stderr = runCLI(t, append(trainArgs(filepath.Join(t.TempDir(), "o"), trainerURL, "mgrpo", 1), "--weight-sync", "vllm")...)
	if code != 2 || !strings.Contains(stderr, "weight-update-path") {
		t.Errorf("--weight-sync vllm without an update action: exit %d, %q; want 2 naming the flag", code, stderr)
	}
}

func TestTrainRefusesBadSetups(t *testing.T) {
	ref, trainerURL := referenceTrainer(t)
	out := filepath.Join(t.TempDir(), "out")
	// An unknown base model is reported before any rollout.
	args := trainArgs(out, trainerURL, "frozen-sub", 1)
	for i, a := range args {
		if a == "sim-base" {
			args[i] = "no-such-model"
		}
	}
	code, _, stderr := runCLI(t, args...)
	if code == 0 || !strings.Contains(stderr, "no-such-model") {
		t.Errorf("unknown base model: exit %d, %q", code, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(out, "step-*")); len(m) != 0 {
		t.Errorf("rollouts ran although the trainer refused the base model: %v", m)
	}
	// mgrpo mode without an executor trainer is a configuration error.
	code, _, stderr = runCLI(t, "train", "--sim", "--out", out, "--planner-trainer", trainerURL, "--base-model-planner", "sim-base", "--weight-sync", "none")
	if code != 2 || !strings.Contains(stderr, "executor-trainer") {
		t.Errorf("mgrpo without --executor-trainer: exit %d, %q; want 2 naming the flag", code, stderr)
	}
	// The asynchronous options: bad values, and a restart of rollouts that
	// workers run, are refused before any rollout.
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--max-staleness", "1", "--partial-rollouts", "later"}, `(--partial-rollouts): "later": want continue or restart`},
		{[]string{"--max-staleness", "1", "--stale-policy", "ignore"}, `(--stale-policy): "ignore": want drop or keep`},
		{[]string{"--max-staleness", "-1"}, "must not be negative"},
		{[]string{"--max-staleness", "1", "--partial-rollouts", "restart", "--workers", "2"}, "a worker's rollout cannot be restarted"},
		{[]string{"--max-staleness", "1", "--stream-groups", "--workers", "2"}, "(--stream-groups): the rollouts run from the store's queue"},
		{[]string{"--stream-groups", "--max-extra-draws", "-1"}, "(--max-extra-draws): -1: must not be negative"},
	} {
		o := filepath.Join(t.TempDir(), "out")
		code, _, stderr := runCLI(t, append(trainArgs(o, trainerURL, "frozen-sub", 1), tc.extra...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 saying %q", tc.extra, code, stderr, tc.want)
		}
		if m, _ := filepath.Glob(filepath.Join(o, "step-*")); len(m) != 0 {
			t.Errorf("%v: rollouts ran: %v", tc.extra, m)
		}
	}
	// A trainer that rejects a batch stops the run, keeping the step's samples.
	ref.Inject(reference.Fault{Method: "POST", Path: "/v1/steps", Status: 422, Body: `{"error":"batch too large for this GPU"}`})
	out2 := filepath.Join(t.TempDir(), "out")
	code, _, stderr = runCLI(t, trainArgs(out2, trainerURL, "frozen-sub", 2)...)
	if code == 0 || !strings.Contains(stderr, "batch too large") || !strings.Contains(stderr, "--resume") {
		t.Errorf("rejected batch: exit %d, %q; want a failure with the trainer's message and how to continue", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(rollout.StepDir(out2, 1), rollout.PlannerFile)); err != nil {
		t.Errorf("the rejected step's samples are gone: %v", err)
	}
}

// TestTrainKilledAndResumed kills `mgrpo train` after its first trained
// step and resumes it: no batch is trained twice, and the resumed run syncs
// the last weights again before its rollouts (its sim restarted on the
// default weights).
func TestTrainKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and trains against the sim")
	}
	ref, trainerURL := referenceTrainer(t)
	out := filepath.Join(t.TempDir(), "out")
	p := startMgrpo(t, trainArgs(out, trainerURL, "mgrpo", 3)...)
	waitFor(t, p.stderr, "msg=\"step trained\" step=1")
	// Into step 2's rollouts, so the kill lands mid-step.
	waitFor(t, p.stderr, "msg=\"step start\" step=2")
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.done <- nil
	resumed := startMgrpo(t, trainArgs(out, trainerURL, "mgrpo", 3, "--resume")...)
	resumed.wait(t, 3*time.Minute)
	if !strings.Contains(resumed.stderr.String(), "syncing the last trained weights again") {
		t.Errorf("the resumed run did not sync the trained weights first:\n%s", resumed.stderr.String())
	}
	checkTrainedRun(t, out, 3, []rollout.Role{rollout.RolePlanner, rollout.RoleExecutor})
	for _, s := range ref.Steps() {
		if n := ref.Trains(s.Key); n != 1 {
			t.Errorf("batch %s trained %d times", s.Key, n)
		}
	}
	if got := len(ref.Steps()); got != 6 {
		t.Errorf("%d batches trained, want 6 (3 steps × 2 roles)", got)
	}
}

// TestTrainStreamedKilledAndResumed kills a streamed `mgrpo train
// --stream-groups --max-staleness 1` once its second step has shipped and
// resumes it: every step is trained once per role, within the bound, and
// no draw is in two steps.
func TestTrainStreamedKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and trains against the sim")
	}
	ref, trainerURL := referenceTrainer(t)
	out := filepath.Join(t.TempDir(), "out")
	args := func(extra ...string) []string {
		return trainArgs(out, trainerURL, "mgrpo", 4, append([]string{"--stream-groups", "--max-staleness", "1", "--drop-zero-variance"}, extra...)...)
	}
	p := startMgrpo(t, args()...)
	waitFor(t, p.stderr, "msg=\"step trained\" step=1")
	waitFor(t, p.stderr, "msg=\"streamed step ships\" step=2")
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.done <- nil
	resumed := startMgrpo(t, args("--resume")...)
	resumed.wait(t, 3*time.Minute)
	for _, s := range ref.Steps() {
		if n := ref.Trains(s.Key); n != 1 {
			t.Errorf("batch %s trained %d times", s.Key, n)
		}
	}
	if got := len(ref.Steps()); got != 8 {
		t.Errorf("%d batches trained, want 8 (4 steps × 2 roles)", got)
	}
	data, err := os.ReadFile(filepath.Join(out, rollout.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	steps := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var sum rollout.StepSummary
		if err := json.Unmarshal([]byte(line), &sum); err != nil {
			t.Fatal(err)
		}
		steps++
		if len(sum.Draws) != 2 {
			t.Errorf("step %d: draws %v, want 2", sum.Step, sum.Draws)
		}
		for _, n := range append(sum.Draws, sum.DiscardedGroups...) {
			if prev, ok := seen[n]; ok {
				t.Errorf("draw %d in steps %d and %d", n, prev, sum.Step)
			}
			seen[n] = sum.Step
		}
		for role, rec := range sum.Training {
			if rec.Staleness < 0 || rec.Staleness > 1 || rec.StaleSamples > 0 {
				t.Errorf("step %d %s: staleness %d, %d stale samples", sum.Step, role, rec.Staleness, rec.StaleSamples)
			}
		}
	}
	if steps != 4 {
		t.Errorf("summary.jsonl holds %d steps, want 4", steps)
	}
}

// TestTrainDecoupled runs the decoupled mode as two processes on one Redis:
// the planner side (rollouts, the planner's training) and the executor side
// (the executors' training), which is killed once and started again. They
// agree through the store only; no batch is trained twice and every sample
// carries the version of the model that produced it.
func TestTrainDecoupled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and trains against the sim")
	}
	storeURL := testRedisStore(t, "decoupled")
	ref, trainerURL := referenceTrainer(t)
	// Servers that outlive both sides, as real ones do (an in-process sim
	// would end with the planner side, before the executor side's last
	// sync).
	cfg := simllm.DefaultConfig()
	cfg.Dialect = simllm.DialectSGLang
	dir := t.TempDir()
	sim := startSimServers(t, dir, cfg, 4)
	out := filepath.Join(dir, "out")
	const steps = 3
	planner := startMgrpo(t, "train", "--tasks", sim.tasks, "--dialect", "sglang", "--out", out, "--run", "decoupled", "--steps", strconv.Itoa(steps),
		"--planner-url", sim.llmURL, "--planner-model", "sim-qwen3", "--executor-url", sim.llmURL, "--executor-model", "sim-qwen3",
		"--search-provider", "searxng", "--search-url", sim.webURL, "--allow-host", sim.webHost,
		"--batch-size", "2", "--group-size", "2", "--concurrency", "4", "--role", "planner", "--store", storeURL,
		"--planner-trainer", trainerURL, "--base-model-planner", "sim-base", "--weight-sync", "sglang")
	waitFor(t, planner.stderr, "msg=\"step start\" step=1")
	executorSide := func() *process {
		return startMgrpo(t, "train", "--role", "executor", "--store", storeURL, "--steps", strconv.Itoa(steps),
			"--executor-trainer", trainerURL, "--base-model-executor", "sim-base", "--weight-sync", "sglang")
	}
	first := executorSide()
	waitFor(t, first.stderr, "msg=\"role trained\" step=1")
	if !strings.Contains(first.stderr.String(), "samples_from=store") {
		t.Errorf("the executor side did not take its samples from the store:\n%s", first.stderr.String())
	}
	first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	first.done <- nil
	again := executorSide()
	planner.wait(t, 3*time.Minute)
	again.wait(t, time.Minute)

	for s := 1; s <= steps; s++ {
		dir := rollout.StepDir(out, s)
		for _, f := range []string{rollout.PlannerFile, rollout.ExecutorFile} {
			samples, err := rollout.ReadSamplesJSONL(filepath.Join(dir, f))
			if err != nil || len(samples) == 0 {
				t.Fatalf("step %d %s: %d samples, %v", s, f, len(samples), err)
			}
			for _, smp := range samples {
				if smp.PolicyVersion != int64(s-1) {
					t.Fatalf("step %d: a %s sample of version %d, want %d", s, smp.Role, smp.PolicyVersion, s-1)
				}
			}
		}
	}
	byRole := map[rollout.Role]int{}
	for _, st := range ref.Steps() {
		byRole[st.Role]++
		if n := ref.Trains(st.Key); n != 1 {
			t.Errorf("batch %s trained %d times", st.Key, n)
		}
	}
	if byRole[rollout.RolePlanner] != steps || byRole[rollout.RoleExecutor] != steps {
		t.Errorf("batches trained by role %v, want %d each", byRole, steps)
	}
}

// TestTrainAsyncRolloutsSpanUpdates trains with --max-staleness 1 against
// the sim's SGLang dialect: rollouts of a step run while the previous step
// trains and its weights are synced, so some rollouts have turns answered
// by two weight versions; each turn records the version that answered it,
// and every sample the version its rollout was scheduled with (the oldest).
func TestTrainAsyncRolloutsSpanUpdates(t *testing.T) {
	if testing.Short() {
		t.Skip("trains against the sim")
	}
	_, trainerURL := referenceTrainer(t)
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runCLI(t, trainArgs(out, trainerURL, "mgrpo", 4, "--max-staleness", "1")...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	sums, err := rollout.ReadSummaries(filepath.Join(out, rollout.SummaryFile))
	if err != nil || len(sums) != 4 {
		t.Fatalf("summary.jsonl: %d, %v", len(sums), err)
	}
	mixed := 0
	for _, sum := range sums {
		for role, rec := range sum.Training {
			if rec.Staleness < 0 || rec.Staleness > 1 {
				t.Errorf("step %d %s: staleness %d, want 0 or 1", sum.Step, role, rec.Staleness)
			}
		}
		dir := rollout.StepDir(out, sum.Step)
		planner, err := rollout.ReadSamplesJSONL(filepath.Join(dir, rollout.PlannerFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, smp := range planner {
			if smp.PolicyVersion < int64(sum.Step-2) || smp.PolicyVersion > int64(sum.Step-1) {
				t.Errorf("step %d: a sample of version %d, want %d or %d", sum.Step, smp.PolicyVersion, sum.Step-2, sum.Step-1)
			}
		}
		for _, line := range readLines(t, filepath.Join(dir, rollout.RolloutsFile)) {
			var rec rollout.RolloutRecord
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			oldest := strconv.FormatInt(rec.Task.PolicyVersion, 10)
			if rec.Task.PolicyVersion == 0 {
				oldest = "default"
			}
			seen := map[string]bool{}
			for _, v := range weightVersions(line) {
				seen[v] = true
			}
			if len(seen) > 1 {
				mixed++
			}
			// The first turn was answered by the version the rollout was
			// scheduled with (or, when the sync came before it, a newer one).
			if len(seen) > 0 && !seen[oldest] && len(seen) > 1 {
				t.Errorf("step %d rollout %s: versions %v answered, none its scheduled %s", sum.Step, rec.ID, seen, oldest)
			}
		}
	}
	t.Logf("%d rollouts had turns answered by two weight versions", mixed)
}
