package run

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
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
var Categories = []struct{ Key, Title string }{
	{"shape", "1. run shape"},
	{"endpoints", "2. endpoints"},
	{"tools", "3. tools"},
	{"timeouts", "4. timeouts"},
	{"training", "5. rewards and training"},
	{"failures", "6. failures"},
	{"store", "7. store and resume"},
	{"output", "8. output"},
	{"sim", "9. simulated world"},
}

// Category returns the title of the category key ("" for none). Help lists
// categories by title, so the titles are numbered in order.
func Category(key string) string {
	for _, c := range Categories {
		if c.Key == key {
			return c.Title
		}
	}
	return ""
}

// FlagSpec is one command-line flag that sets configuration keys, derived
// from Config's tags, so that a key's flag name, help, default and YAML key
// have one source: the `flag` (or `roleflag`) tag names it, the `doc` tag
// is its help (a {{WORD}} in it names the flag's value), the
// DefaultConfig value its default, and the `yaml` tags the keys it sets.
type FlagSpec struct {
	Name string
	// Usage is the help text; a role flag's says which roles it sets.
	Usage string
	// Keys are the YAML keys the flag sets (several for a role flag).
	Keys []string
	// Scope is ScopeAgent, ScopeFarm or ScopeTrain.
	Scope string
	// Category is the heading help lists the flag under (Categories).
	Category string
	// DefaultText, when set, is what help shows as the default instead of
	// Default: what the zero value stands for ("0.2" for a clip the
	// trainer defaults).
	DefaultText string
	// Default is the flag's default, of the type SetFlag takes: string,
	// int, uint64, bool, float64, []string, time.Duration or Timeout.
	Default any
	// Split makes a list flag's values comma-separated lists too.
	Split bool
	// Append adds a list flag's values to the file's instead of replacing
	// them.
	Append bool

	index [][]int
}

// Flags returns the configuration's flags of the given scopes, in the
// order of their keys in Config.
func Flags(scopes ...string) []FlagSpec {
	def := reflect.ValueOf(DefaultConfig())
	var out []FlagSpec
	at := map[string]int{}
	for _, k := range configKeys() {
		if k.flag == "" || !slices.Contains(scopes, k.scope) {
			continue
		}
		if i, ok := at[k.flag]; ok {
			out[i].Keys = append(out[i].Keys, k.key)
			out[i].index = append(out[i].index, k.index)
			out[i].Usage = strings.Replace(out[i].Usage, "(the "+rolesOf(out[i].Keys[:len(out[i].Keys)-1])+")", "(the "+rolesOf(out[i].Keys)+")", 1)
			continue
		}
		usage := placeholder.ReplaceAllString(k.doc, "`$1`")
		switch {
		case k.role != "":
			usage += " (the " + rolesOf([]string{k.key}) + ")"
		case strings.Contains(k.key, "."):
			if role, _, _ := strings.Cut(k.key, "."); isRole(role) {
				usage = role + ": " + usage
			}
		}
		at[k.flag] = len(out)
		out = append(out, FlagSpec{Name: k.flag, Usage: usage, Keys: []string{k.key}, Scope: k.scope,
			Category: Category(k.category), DefaultText: k.zero,
			Default: flagValue(def.FieldByIndex(k.index)), Split: slices.Contains(k.opts, "split"),
			Append: slices.Contains(k.opts, "append"), index: [][]int{k.index}})
	}
	return out
}

// isRole reports whether a top-level key is an endpoint role's.
func isRole(key string) bool {
	switch key {
	case "planner", "executor", "reasoner", "judge":
		return true
	}
	return false
}

// rolesOf names the roles of role keys: "planner and executor".
func rolesOf(keys []string) string {
	var roles []string
	for _, k := range keys {
		role, _, _ := strings.Cut(k, ".")
		roles = append(roles, role)
	}
	if len(roles) < 2 {
		return strings.Join(roles, "")
	}
	return strings.Join(roles[:len(roles)-1], ", ") + " and " + roles[len(roles)-1]
}

// flagValue returns a configuration field's value as a flag holds it.
func flagValue(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case Duration:
		return x.Duration
	default:
		return x
	}
}

// SetFlag sets the keys of the flag name to value, as the command line
// parsed it (of the type of the flag's Default; a Timeout may come as a
// *Timeout).
func (c *Config) SetFlag(name string, value any) error {
	for _, f := range Flags(ScopeAgent, ScopeFarm, ScopeTrain) {
		if f.Name != name {
			continue
		}
		for _, idx := range f.index {
			if err := setField(reflect.ValueOf(c).Elem().FieldByIndex(idx), value, f); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("--%s: no configuration key has this flag", name)
}

// setField sets one configuration field from a flag's value.
func setField(dst reflect.Value, value any, f FlagSpec) error {
	switch v := value.(type) {
	case *Timeout:
		value = *v
	case *Concurrency:
		value = *v
	case []string:
		var list []string
		for _, s := range v {
			if !f.Split {
				list = append(list, s)
				continue
			}
			for _, part := range strings.Split(s, ",") {
				if part = strings.TrimSpace(part); part != "" {
					list = append(list, part)
				}
			}
		}
		if f.Append {
			list = append(dst.Interface().([]string), list...)
		}
		value = list
	case time.Duration:
		if dst.Type() == reflect.TypeFor[Duration]() {
			value = Duration{Duration: v}
		}
	}
	src := reflect.ValueOf(value)
	if !src.Type().AssignableTo(dst.Type()) {
		return fmt.Errorf("a %s value for a %s key", src.Type(), dst.Type())
	}
	dst.Set(src)
	return nil
}
