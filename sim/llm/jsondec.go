package llm

import "github.com/mgrpo/mgrpo/internal/jsonfast"

// jsonDec is the fast request decoders' JSON reader (see jsonfast.Scanner:
// strict, never panics, gives up instead of erring, so its callers then
// decode the body with encoding/json, whose result or error is the
// authoritative one).
type jsonDec struct {
	jsonfast.Scanner
}
