package llm

import (
	"bytes"
	"io"
	"sync"
)

// maxPooledBytes bounds the buffers kept for reuse, so one huge request or
// response does not stay pinned in the pools.
const maxPooledBytes = 1 << 20

// Request bodies and chat responses are tens of kilobytes each; growing a
// fresh buffer for every call was a large share of the server's allocation
// and so of its GC work. The decoders copy what they keep out of a body, and
// a response is written before its buffer goes back, so neither escapes.
var (
	bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	encPool  = sync.Pool{New: func() any { return &jsonEnc{b: make([]byte, 0, 32<<10)} }}
)

// readPooled reads r into a pooled buffer; release it with putBody once
// nothing refers to its bytes.
func readPooled(r io.Reader) (*bytes.Buffer, error) {
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		putBody(buf)
		return nil, err
	}
	return buf, nil
}

func putBody(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBytes {
		bodyPool.Put(buf)
	}
}

// getEnc returns an empty pooled encoder; release it with putEnc once its
// bytes are written.
func getEnc() *jsonEnc {
	e := encPool.Get().(*jsonEnc)
	e.b, e.err = e.b[:0], nil
	return e
}

func putEnc(e *jsonEnc) {
	if cap(e.b) <= maxPooledBytes {
		encPool.Put(e)
	}
}
