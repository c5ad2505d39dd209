//go:build unix

package llm

import "syscall"

// waitReadable blocks until the connection has bytes to read, is closed
// by the peer, or reaches its deadline (see interrupt), without a read
// buffer: it peeks one byte without consuming it and waits on the runtime
// poller while there is none. (Waiting without trying first would miss an
// answer that is already there: the poller is edge-triggered and a wait
// forgets an earlier edge.)
func (pc *h1Conn) waitReadable() error {
	if pc.raw == nil {
		return nil
	}
	var one [1]byte
	return pc.raw.Read(func(fd uintptr) bool {
		// Only "nothing yet" waits; data, end of stream or any error
		// (EINTR included) goes on to the buffered read, which handles it.
		_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return err != syscall.EAGAIN && err != syscall.EWOULDBLOCK
	})
}
