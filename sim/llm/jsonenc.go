package llm

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// jsonAppender is a response type with a hand-written encoder. The chat
// responses carry thousands of token ids and per-token logprob objects, and
// encoding/json's reflection over them cost about half of a request's CPU.
// appendJSON must write exactly what marshalJSON's encoding/json path writes
// for the same value (jsonenc_test.go checks this on random values).
type jsonAppender interface {
	appendJSON(e *jsonEnc)
}

// jsonEnc appends JSON to b the way encoding/json does with SetEscapeHTML
// (false). The first error (a NaN or infinite float, or a fallback value
// encoding/json rejects) sticks in err.
type jsonEnc struct {
	b   []byte
	err error
}

func (e *jsonEnc) raw(s string) { e.b = append(e.b, s...) }

// key writes a member name (a constant without characters to escape)
// followed by a colon; sep is "," except before the first member.
func (e *jsonEnc) key(sep, name string) {
	e.b = append(e.b, sep...)
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
}

func (e *jsonEnc) int(v int)     { e.b = appendInt(e.b, v) }
func (e *jsonEnc) int64(v int64) { e.b = strconv.AppendInt(e.b, v, 10) }

func (e *jsonEnc) bool(v bool) { e.b = strconv.AppendBool(e.b, v) }

// ints writes a list of integers; nil is null, as encoding/json writes it.
func (e *jsonEnc) ints(v []int) {
	if v == nil {
		e.raw("null")
		return
	}
	e.b = appendIntList(e.b, v)
}

// float writes f like encoding/json's float64 encoder: the shortest
// representation, in exponent form below 1e-6 and from 1e21 on, with the
// exponent's leading zero dropped (1e-07 becomes 1e-7).
func (e *jsonEnc) float(f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if e.err == nil {
			e.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		e.raw("null")
		return
	}
	if b, ok := appendMicros(e.b, f); ok {
		e.b = b
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

// str writes s as a JSON string with encoding/json's escapes, HTML
// characters left literal.
func (e *jsonEnc) str(s string) { e.b = appendJSONString(e.b, s) }

// strPtr writes *p, or null for a nil pointer.
func (e *jsonEnc) strPtr(p *string) {
	if p == nil {
		e.raw("null")
		return
	}
	e.str(*p)
}

// anyPtr writes *p, or null for a nil pointer.
func (e *jsonEnc) anyPtr(p *any) {
	if p == nil {
		e.raw("null")
		return
	}
	e.any(*p)
}

// any writes the dynamic values the response types hold; anything else goes
// through encoding/json.
func (e *jsonEnc) any(v any) {
	switch v := v.(type) {
	case nil:
		e.raw("null")
	case string:
		e.str(v)
	case int:
		e.int(v)
	case int64:
		e.int64(v)
	case float64:
		e.float(v)
	case bool:
		e.bool(v)
	case []int:
		e.ints(v)
	case [3]any:
		e.triple(v)
	case jsonAppender:
		v.appendJSON(e)
	default:
		b, err := marshalReflect(v)
		if err != nil {
			if e.err == nil {
				e.err = err
			}
			e.raw("null")
			return
		}
		e.b = append(e.b, b...)
	}
}

// triple writes a [logprob, id, text] entry of SGLang's logprob lists.
func (e *jsonEnc) triple(t [3]any) {
	e.b = append(e.b, '[')
	e.any(t[0])
	e.b = append(e.b, ',')
	e.any(t[1])
	e.b = append(e.b, ',')
	e.any(t[2])
	e.b = append(e.b, ']')
}

// triples writes a list of triples; nil is null.
func (e *jsonEnc) triples(ts [][3]any) { writeList(e, ts, func(t *[3]any) { e.triple(*t) }) }

// writeList writes xs as a JSON array, each element with write; nil is null, as
// encoding/json writes a nil slice.
func writeList[T any](e *jsonEnc, xs []T, write func(*T)) {
	if xs == nil {
		e.raw("null")
		return
	}
	e.b = append(e.b, '[')
	for i := range xs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		write(&xs[i])
	}
	e.b = append(e.b, ']')
}

// chatHead opens a chat completion object with the members both dialects
// start with.
func (e *jsonEnc) chatHead(id, object string, created int64, model string) {
	e.key("{", "id")
	e.str(id)
	e.key(",", "object")
	e.str(object)
	e.key(",", "created")
	e.int64(created)
	e.key(",", "model")
	e.str(model)
}

// usageHead opens a usage object with the members both dialects start
// with; the caller adds its own and closes it.
func (e *jsonEnc) usageHead(prompt, total, completion int, details *any) {
	e.key("{", "prompt_tokens")
	e.int(prompt)
	e.key(",", "total_tokens")
	e.int(total)
	e.key(",", "completion_tokens")
	e.int(completion)
	e.key(",", "prompt_tokens_details")
	e.anyPtr(details)
}

// stringMap writes m with its keys sorted, as encoding/json does; nil is
// null.
func (e *jsonEnc) stringMap(m map[string]string) {
	if m == nil {
		e.raw("null")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, k := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(k)
		e.b = append(e.b, ':')
		e.str(m[k])
	}
	e.b = append(e.b, '}')
}
