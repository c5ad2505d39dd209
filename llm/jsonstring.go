package llm

import "github.com/mgrpo/mgrpo/internal/jsonfast"

// appendQuoted appends s as json.Marshal writes a string, quotes included.
func appendQuoted(dst []byte, s string) []byte { return jsonfast.AppendString(dst, s, true) }
