package run

import (
	"reflect"
	"strings"

	"github.com/mgrpo/mgrpo/internal/conftags"
	"github.com/mgrpo/mgrpo/tools/search"
)

// The scopes of configuration flags: which commands have them.
const (
	// ScopeAgent flags configure the agents, their endpoints and tools:
	// every command that runs agents (rollout, train, eval) has them.
	ScopeAgent = "agent"
	// ScopeFarm flags shape a run of steps (rollout and train).
	ScopeFarm = "farm"
	// ScopeTrain flags configure the trainers (train only).
	ScopeTrain = "train"
)

// Categories are the headings of the flags in help, in the order a user
// needs them: the run's shape first. The configuration's `category` tags
// name them by key (shape, endpoints, …).
var Categories = []conftags.Category{
	{Key: "shape", Title: "1. run shape"},
	{Key: "endpoints", Title: "2. endpoints"},
	{Key: "tools", Title: "3. tools"},
	{Key: "timeouts", Title: "4. timeouts"},
	{Key: "training", Title: "5. rewards and training"},
	{Key: "failures", Title: "6. failures"},
	{Key: "store", Title: "7. store and resume"},
	{Key: "output", Title: "8. output"},
	{Key: "sim", Title: "9. simulated world"},
}

// docPlaceholders fill `doc` tags whose text comes from a registry, so that
// help texts list what the code accepts.
var docPlaceholders = strings.NewReplacer("{providers}", search.NameList())

// schema is Config as its tags describe it (see Config and
// internal/conftags): keys without a scope tag are ScopeAgent's.
func schema() conftags.Schema {
	return conftags.Schema{Default: DefaultConfig(), Doc: docPlaceholders.Replace, Scope: ScopeAgent,
		Leaves:     []reflect.Type{reflect.TypeFor[Duration](), reflect.TypeFor[Timeout](), reflect.TypeFor[Concurrency]()},
		Categories: Categories, IsRole: isRole}
}

// FlagSpec is one command-line flag that sets configuration keys, derived
// from Config's tags: Default is of the type SetFlag takes (string, int,
// uint64, bool, float64, []string, time.Duration, Timeout or Concurrency).
type FlagSpec = conftags.FlagSpec

// Category returns the title of the category key ("" for none). Help lists
// categories by title, so the titles are numbered in order.
func Category(key string) string { return schema().Category(key) }

// Flags returns the configuration's flags of the given scopes, in the
// order of their keys in Config.
func Flags(scopes ...string) []FlagSpec { return schema().Flags(scopes...) }

// Keys lists every key of the configuration with its doc, its default and,
// where a flag sets it, the flag: one "  key  doc (default: v) (--flag)"
// line each, in file order, for help texts.
func Keys() []string { return schema().Keys() }

// KeyDoc is one configuration key as help shows it.
type KeyDoc = conftags.KeyDoc

// KeyDocs lists every key of the configuration, in file order, for help.
func KeyDocs() []KeyDoc { return schema().KeyDocs() }

// SetFlag sets the keys of the flag name to value, as the command line
// parsed it (of the type of the flag's Default; a Timeout may come as a
// *Timeout, a Concurrency as a *Concurrency).
func (c *Config) SetFlag(name string, value any) error { return schema().Set(c, name, value) }

// isRole reports whether a top-level key is an endpoint role's.
func isRole(key string) bool {
	switch key {
	case "planner", "executor", "reasoner", "judge":
		return true
	}
	return false
}
