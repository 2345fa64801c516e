//go:build unix

package hostile

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// refusedPort binds a TCP socket to a free port of 127.0.0.1 without
// listening on it, and closes it when the test ends: a connection to a
// bound port that does not listen is refused, and the port is not free
// for another server meanwhile.
func refusedPort(t testing.TB) (string, bool) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", false
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", false
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return "", false
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), true
}
