//go:build !unix

package llm

// waitReadable returns at once where there is no non-consuming peek; the
// exchange then waits for its answer holding a read buffer.
func (pc *h1Conn) waitReadable() error { return nil }
