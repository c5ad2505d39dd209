package weightsync

import (
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// Placeholders of the weights-path template. The body and command
// templates of a vLLM update action take them too, plus PlaceholderPath
// and PlaceholderEndpoint.
const (
	// PlaceholderRef is the trainer's weights reference as it gave it
	// (StepResult.Weights): a tinker:// path, a directory, a URL.
	PlaceholderRef = "ref"
	// PlaceholderName is the reference's last element: "step-3" for
	// tinker://run/weights/step-3 or /ckpt/planner/step-3/.
	PlaceholderName = "name"
	// PlaceholderRole is the role whose weights these are (planner,
	// executor).
	PlaceholderRole = "role"
	// PlaceholderStep is the training step that produced the weights.
	PlaceholderStep = "step"
	// PlaceholderVersion is the policy version of the weights.
	PlaceholderVersion = "version"
	// PlaceholderPath is the weights-path template's result (update
	// actions only).
	PlaceholderPath = "path"
	// PlaceholderEndpoint is the base URL of the endpoint being updated
	// (update actions only).
	PlaceholderEndpoint = "endpoint"
)

var (
	pathPlaceholders   = []string{PlaceholderRef, PlaceholderName, PlaceholderRole, PlaceholderStep, PlaceholderVersion}
	actionPlaceholders = append(append([]string(nil), pathPlaceholders...), PlaceholderPath, PlaceholderEndpoint)
)

// template is a parsed template: literal text and placeholders. A
// placeholder is {name} or {name:W}, name made of lowercase letters and
// underscores; W pads a number with zeros to W digits ({step:6} gives
// 000003). Any other brace is literal, so JSON bodies need no escaping.
type template struct {
	src   string
	parts []part
}

type part struct {
	lit   string
	name  string // "" for a literal
	width int
}

// parseTemplate parses src, accepting only the placeholders in allowed.
func parseTemplate(src string, allowed []string) (template, error) {
	t := template{src: src}
	lit := 0
	for i := 0; i < len(src); i++ {
		if src[i] != '{' {
			continue
		}
		end := strings.IndexByte(src[i:], '}')
		if end < 0 {
			break
		}
		body := src[i+1 : i+end]
		name, width, ok := placeholder(body)
		if !ok {
			continue
		}
		if !contains(allowed, name) {
			return template{}, fmt.Errorf("template %q: unknown placeholder {%s} (known: {%s})", src, body, strings.Join(allowed, "}, {"))
		}
		if width > 0 && name != PlaceholderStep && name != PlaceholderVersion {
			return template{}, fmt.Errorf("template %q: {%s}: a width applies to {step} and {version} only", src, body)
		}
		if lit < i {
			t.parts = append(t.parts, part{lit: src[lit:i]})
		}
		t.parts = append(t.parts, part{name: name, width: width})
		i += end
		lit = i + 1
	}
	if lit < len(src) {
		t.parts = append(t.parts, part{lit: src[lit:]})
	}
	return t, nil
}

// placeholder reads "name" or "name:W"; ok is false for text that is not
// a placeholder (JSON, say).
func placeholder(body string) (name string, width int, ok bool) {
	name, w, hasWidth := strings.Cut(body, ":")
	if name == "" {
		return "", 0, false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && c != '_' {
			return "", 0, false
		}
	}
	if hasWidth {
		n, err := strconv.Atoi(w)
		if err != nil || n < 1 || n > 20 {
			return "", 0, false
		}
		width = n
	}
	return name, width, true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// uses reports whether the template has placeholder name.
func (t template) uses(name string) bool {
	for _, p := range t.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// expand fills the placeholders from vars, passing each value through
// escape (nil: as is).
func (t template) expand(vars map[string]string, escape func(string) string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.lit)
			continue
		}
		v := vars[p.name]
		if p.width > 0 {
			digits, neg := strings.CutPrefix(v, "-")
			if len(digits) < p.width {
				digits = strings.Repeat("0", p.width-len(digits)) + digits
			}
			if v = digits; neg {
				v = "-" + digits
			}
		}
		if escape != nil {
			v = escape(v)
		}
		b.WriteString(v)
	}
	return b.String()
}

// jsonEscape escapes s for use inside a JSON string literal.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// templateVars are the values of a sync's placeholders.
func templateVars(role, ref string, version int64, step int) map[string]string {
	return map[string]string{
		PlaceholderRef:     ref,
		PlaceholderName:    refName(ref),
		PlaceholderRole:    role,
		PlaceholderStep:    strconv.Itoa(step),
		PlaceholderVersion: strconv.FormatInt(version, 10),
	}
}

// refName is the last element of a weights reference, ignoring a
// trailing slash and any URL scheme.
func refName(ref string) string {
	if _, rest, ok := strings.Cut(ref, "://"); ok {
		ref = rest
	}
	ref = strings.TrimRight(ref, "/")
	if ref == "" {
		return ""
	}
	return path.Base(ref)
}

// ExpandPath returns what the weights-path template tmpl gives for a
// sync, as Sync computes it; it is exported for checking a template
// (and for the documentation's examples).
func ExpandPath(tmpl, role, ref string, version int64, step int) (string, error) {
	if tmpl == "" {
		tmpl = DefaultPathTemplate
	}
	t, err := parseTemplate(tmpl, pathPlaceholders)
	if err != nil {
		return "", err
	}
	return t.expand(templateVars(role, ref, version, step), nil), nil
}
