package conftags

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mgrpo/mgrpo/internal/yamlstrict"
)

// FlagSpec is one command-line flag that sets configuration keys, derived
// from the configuration's tags: the `flag` (or `roleflag`) tag names it,
// the `doc` tag is its help (a {{WORD}} in it names the flag's value), the
// default configuration's value its default, and the `yaml` tags the keys
// it sets.
type FlagSpec struct {
	Name string
	// Usage is the help text; a role flag's says which roles it sets.
	Usage string
	// Keys are the YAML keys the flag sets (several for a role flag).
	Keys []string
	// Scope says which commands have the flag.
	Scope string
	// Category is the heading help lists the flag under (a Category's
	// Title).
	Category string
	// DefaultText, when set, is what help shows as the default instead of
	// Default: what the zero value stands for ("0.2" for a clip the
	// trainer defaults).
	DefaultText string
	// Default is the flag's default, of the type Set takes: the field's
	// type, with a yamlstrict.Duration as a time.Duration.
	Default any
	// Split makes a list flag's values comma-separated lists too.
	Split bool
	// Append adds a list flag's values to the file's instead of replacing
	// them.
	Append bool

	index [][]int
}

// Category returns the title of the category key ("" for none). Help lists
// categories by title, so the titles are numbered in order.
func (s Schema) Category(key string) string {
	for _, c := range s.Categories {
		if c.Key == key {
			return c.Title
		}
	}
	return ""
}

// Flags returns the configuration's flags of the given scopes, in the
// order of their keys.
func (s Schema) Flags(scopes ...string) []FlagSpec {
	def := reflect.ValueOf(s.Default)
	var out []FlagSpec
	at := map[string]int{}
	for _, k := range s.keys() {
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
			if role, _, _ := strings.Cut(k.key, "."); s.IsRole != nil && s.IsRole(role) {
				usage = role + ": " + usage
			}
		}
		at[k.flag] = len(out)
		out = append(out, FlagSpec{Name: k.flag, Usage: usage, Keys: []string{k.key}, Scope: k.scope,
			Category: s.Category(k.category), DefaultText: k.zero,
			Default: flagValue(def.FieldByIndex(k.index)), Split: slices.Contains(k.opts, "split"),
			Append: slices.Contains(k.opts, "append"), index: [][]int{k.index}})
	}
	return out
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
	case yamlstrict.Duration:
		return x.Duration
	default:
		return x
	}
}

// Set sets the keys of the flag name in the configuration cfg points to
// (of the Default's type) to value, as the command line parsed it: of the
// type of the flag's Default, or a pointer to it.
func (s Schema) Set(cfg any, name string, value any) error {
	for _, f := range s.Flags(s.scopes()...) {
		if f.Name != name {
			continue
		}
		for _, idx := range f.index {
			if err := setField(reflect.ValueOf(cfg).Elem().FieldByIndex(idx), value, f); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("--%s: no configuration key has this flag", name)
}

// scopes returns every scope of the configuration's keys.
func (s Schema) scopes() []string {
	var out []string
	for _, k := range s.keys() {
		if !slices.Contains(out, k.scope) {
			out = append(out, k.scope)
		}
	}
	return out
}

// setField sets one configuration field from a flag's value.
func setField(dst reflect.Value, value any, f FlagSpec) error {
	if rv := reflect.ValueOf(value); rv.Kind() == reflect.Pointer && !rv.IsNil() &&
		!rv.Type().AssignableTo(dst.Type()) && rv.Type().Elem().AssignableTo(dst.Type()) {
		value = rv.Elem().Interface() // a flag.Value of the field's own type
	}
	switch v := value.(type) {
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
		if dst.Type() == reflect.TypeFor[yamlstrict.Duration]() {
			value = yamlstrict.Duration{Duration: v}
		}
	}
	src := reflect.ValueOf(value)
	if !src.Type().AssignableTo(dst.Type()) {
		return fmt.Errorf("a %s value for a %s key", src.Type(), dst.Type())
	}
	dst.Set(src)
	return nil
}
