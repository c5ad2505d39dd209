package depcheck

import "testing"

// above lists, for each layer, the packages above it, as
// docs/architecture.md draws them: arrows run downward only.
var (
	cli      = []string{"cmd/..."}
	root     = append([]string{"run/..."}, cli...)
	runtime  = append([]string{"farm/..."}, root...)
	registry = []string{"store/backends/...", "trainer_bridge/backends/..."}
)

// layers are the project's layering rules, one per top-level package (and
// the pure layer, the farm runtime and the model client inside theirs).
var layers = []Rule{
	{Packages: "rollout", Why: "the pure M-GRPO layer imports nothing of the runtime, so store and trainer_bridge can use it; move the code that needs it to farm",
		Forbidden: append([]string{"agents/...", "tools/...", "store/...", "trainer_bridge/...", "bench/...", "sim/..."}, runtime...)},
	{Packages: "farm/...", Why: "the farm runtime is wired by the composition root (run), never the other way; benchmarks, the sim and the backend registries are the root's to choose",
		Forbidden: append(append([]string{"bench/...", "sim/..."}, registry...), root...)},
	{Packages: "farm/gateway/...", Why: "the gateway is a runner of the farm: it knows the farm, the agents' trees and the model client, never the benchmarks, the sim, the backend registries or the root that wires it",
		Forbidden: append(append([]string{"bench/...", "sim/..."}, registry...), root...)},
	{Packages: "farm/gateway/...", Direct: true, Why: "the gateway forwards calls and builds trees; the tools, the store and the trainers are the farm's",
		Forbidden: []string{"tools/...", "store/...", "trainer_bridge/..."}},
	{Packages: "llm/...", Why: "the model client is the bottom of the agent side",
		Forbidden: append([]string{"agents", "tools/...", "rollout/...", "store/...", "trainer_bridge/...", "bench/...", "sim/..."}, root...)},
	{Packages: "agents", Why: "the agents know models and tools, not the farm, the store or the trainers",
		Forbidden: append([]string{"rollout/...", "store/...", "trainer_bridge/...", "bench/...", "sim/..."}, root...)},
	{Packages: "tools/...", Why: "tools serve the agents; they know nothing of them or of the farm",
		Forbidden: append([]string{"agents", "rollout/...", "store/...", "trainer_bridge/...", "bench/...", "sim/..."}, root...)},
	{Packages: "store/...", Why: "the store holds the pure layer's records only",
		Forbidden: append([]string{"agents/...", "tools/...", "trainer_bridge/...", "bench/...", "sim/..."}, runtime...)},
	{Packages: "trainer_bridge/...", Why: "the trainer bridge takes samples from the pure rollout package only",
		Forbidden: append([]string{"agents/...", "tools/...", "store/...", "bench/...", "sim/..."}, runtime...)},
	{Packages: "bench/...", Why: "benchmarks evaluate agents; they never train, and are wired by the composition root",
		Forbidden: append([]string{"trainer_bridge/...", "sim/..."}, root...)},
	{Packages: "bench/view", Why: "the viewer reads the step files' records from the pure layer, never the runtime",
		Forbidden: append([]string{"farm/...", "agents/...", "tools/...", "store/...", "trainer_bridge/...", "sim/..."}, root...)},
	{Packages: "agents", Direct: true, Why: "the agents name tool failures by internal/failure's classes, not tools/remote's plumbing",
		Forbidden: []string{"tools/remote/..."}},
	{Packages: "farm/...", Direct: true, Why: "the farm names tool failures by internal/failure's classes, not tools/remote's plumbing",
		Forbidden: []string{"tools/remote/..."}},
	{Packages: "sim/...", Tests: true, Why: "the sim is an independent implementation of the wire formats: it shares no code with the client packages, tests included",
		Forbidden: append([]string{"agents/...", "tools/...", "rollout/...", "bench/...", "store/...", "trainer_bridge/...", "internal/jsonfast/...", "internal/httpretry/..."}, root...)},
	{Packages: "internal/...", Why: "internal packages are leaves every layer may import",
		Forbidden: append([]string{"agents/...", "tools/...", "rollout/...", "store/...", "trainer_bridge/...", "bench/...", "sim/..."}, root...)},
	{Packages: "run/...", Why: "nothing imports the CLI", Forbidden: cli},
	{Packages: "cmd/...", Direct: true, Why: "the CLI parses flags into run's configuration and calls run, the one place that wires the runtime and its clients; what it shows of them (progress, defaults, the judge) comes through run",
		Forbidden: []string{"farm/...", "llm/...", "agents/...", "store/...", "trainer_bridge/..."}},
}

// order is the house's layering of the top-level folders, top to bottom:
// cmd → run → farm, bench → agents → tools → llm; farm → store,
// trainer_bridge → rollout; the sim apart (only the root starts it);
// internal at the bottom.
var order = Order{
	"cmd":            {"run", "bench", "tools", "sim"},
	"run":            {"farm", "bench", "sim"},
	"farm":           {"agents", "store", "trainer_bridge"},
	"bench":          {"agents", "rollout"},
	"agents":         {"tools"},
	"tools":          {"llm"},
	"llm":            {"internal"},
	"store":          {"rollout"},
	"trainer_bridge": {"rollout"},
	"rollout":        {"internal"},
	"sim":            {"internal"},
	"internal":       {},
}

// TestLayers checks every layering rule against the module's import graph.
func TestLayers(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range layers {
		t.Run(r.Packages, func(t *testing.T) { g.Check(t, r) })
	}
}

// TestNoImportRunsUpward checks that no import between top-level folders
// runs upward in order; tests may also start the simulated world.
func TestNoImportRunsUpward(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	g.CheckOrder(t, order, "sim")
}

// TestCheckOrderFindsAViolation: an order that puts rollout above store
// must report store's import of rollout.
func TestCheckOrderFindsAViolation(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	upside := Order{}
	for k, v := range order {
		upside[k] = v
	}
	upside["store"] = []string{"internal"}
	upside["rollout"] = []string{"store"}
	rec := &recorder{TB: t}
	g.CheckOrder(rec, upside, "sim")
	if len(rec.errors) == 0 {
		t.Fatal("store imports rollout, which the order puts above it, but CheckOrder reported nothing")
	}
}

// TestCheckFindsAViolation keeps the checker honest: a rule the module
// breaks on purpose must fail, naming the chain of imports.
func TestCheckFindsAViolation(t *testing.T) {
	g, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	g.Check(rec, Rule{Packages: "cmd/mgrpo", Forbidden: []string{"rollout"}, Why: "test"})
	if len(rec.errors) == 0 {
		t.Fatal("cmd/mgrpo depends on rollout, but Check reported nothing")
	}
	rec = &recorder{TB: t}
	g.Check(rec, Rule{Packages: "rollout", Forbidden: []string{"farm"}, Why: "test"})
	if len(rec.errors) != 0 {
		t.Fatalf("rollout does not depend on farm, but Check reported %v", rec.errors)
	}
}

// recorder collects a check's failures instead of failing the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
