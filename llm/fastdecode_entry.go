package llm

import "bytes"

// A completion has one logprobs.content entry per sampled token, and
// walking each entry's members through the general scanner cost twice as
// much as parsing its logprob. Servers write the entries compactly with the
// same four keys, so quickEntry matches those keys in place and reads the
// bytes array in one loop; any other entry goes to logprobEntry.

// Key prefixes quickEntry matches after an entry key's opening quote.
const (
	tokenKey       = `token":`
	logprobKey     = `logprob":`
	bytesKey       = `bytes":`
	emptyTopMember = `top_logprobs":[]`
)

// quickEntry decodes a logprobs.content entry whose members are token,
// logprob, bytes and top_logprobs (empty), each at most once, in any order,
// with no whitespace between members, as logprobEntry would. For anything
// else it consumes nothing and reports false.
func (s *jscan) quickEntry(sc *scratch, wantTokens bool) bool {
	start := s.I
	var (
		seen uint
		lp   float64
		tok  string
	)
	b := s.B
	if s.I >= len(b) || b[s.I] != '{' {
		return false
	}
	s.I++
	for {
		if s.I >= len(b) || b[s.I] != '"' {
			break
		}
		rest := b[s.I+1:]
		ok := false
		switch {
		case bytes.HasPrefix(rest, []byte(logprobKey)) && once(&seen, 1):
			s.I += 1 + len(logprobKey)
			lp, ok = s.Float()
		case bytes.HasPrefix(rest, []byte(tokenKey)) && once(&seen, 2):
			s.I += 1 + len(tokenKey)
			if wantTokens {
				tok, ok = s.text()
			} else if ok = s.Null(); !ok {
				_, _, ok = s.Str()
			}
		case bytes.HasPrefix(rest, []byte(bytesKey)) && once(&seen, 4):
			s.I += 1 + len(bytesKey)
			ok = s.quickBytes()
		case bytes.HasPrefix(rest, []byte(emptyTopMember)) && once(&seen, 8):
			s.I += 1 + len(emptyTopMember)
			ok = true
		}
		if !ok || s.I >= len(b) {
			break
		}
		s.I++
		if c := b[s.I-1]; c == ',' {
			continue
		} else if c != '}' || seen&1 == 0 {
			break
		}
		sc.lps = append(sc.lps, lp)
		if wantTokens {
			sc.toks = append(sc.toks, tok)
		}
		return true
	}
	s.I = start
	return false
}

// quickBytes consumes a compact array of byte values (0–255, no leading
// zeros, no whitespace), as byteArray accepts; anything else is refused.
func (s *jscan) quickBytes() bool {
	b, i := s.B, s.I
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i++
	if i < len(b) && b[i] == ']' {
		s.I = i + 1
		return true
	}
	for {
		v, d := 0, 0
		for i < len(b) && d < 4 && '0' <= b[i] && b[i] <= '9' {
			v = v*10 + int(b[i]-'0')
			i++
			d++
		}
		if d == 0 || d > 3 || v > 255 || d > 1 && b[i-d] == '0' || i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			s.I = i + 1
			return true
		default:
			return false
		}
	}
}
