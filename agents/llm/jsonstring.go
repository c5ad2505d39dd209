package llm

import "github.com/mgrpo/mgrpo/internal/jsontext"

// appendQuoted appends s as json.Marshal writes a string, quotes included.
func appendQuoted(dst []byte, s string) []byte { return jsontext.AppendString(dst, s, true) }
