package mcpserver

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// polled returns f as a reader the runtime's poller waits on, when f is a
// pipe or a socket in blocking mode (as a client starting `mcp serve
// --stdio` hands its pipe over): a read of a blocking descriptor holds a
// thread in the kernel while the client is quiet, and the runtime hands
// the thread's processor to another thread and back as lines come and go
// (a sixth of `mcp serve --stdio`'s CPU a call at concurrency, and 40% of
// its context switches: docs/benchmarks.md, issue 47's fifth pass). A
// terminal (whose mode the shell shares), a regular file (no poller waits
// on one) or a descriptor already non-blocking is returned as it is.
func polled(f *os.File) io.ReadCloser {
	rc, err := f.SyscallConn() // its descriptor, left in its mode (Fd would make it blocking)
	if err != nil {
		return f
	}
	fd := -1
	rc.Control(func(d uintptr) { fd = int(d) })
	var st syscall.Stat_t
	if fd < 0 || syscall.Fstat(fd, &st) != nil {
		return f
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return f
	}
	if flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0); errno != 0 || flags&syscall.O_NONBLOCK != 0 {
		return f // polled by the runtime already, or another's to manage
	}
	// A descriptor of its own (f's stays f's to close), on the same open
	// file, whose mode the two share.
	dup, err := syscall.Dup(fd)
	if err != nil {
		return f
	}
	syscall.CloseOnExec(dup)
	if syscall.SetNonblock(dup, true) != nil {
		syscall.Close(dup)
		return f
	}
	p := pollingFile{File: os.NewFile(uintptr(dup), f.Name()), of: f}
	if p.SetReadDeadline(time.Time{}) != nil { // the poller would not take it
		syscall.SetNonblock(dup, false)
		p.File.Close()
		return f
	}
	return p
}

// pollingFile reads the open file of another (of) in non-blocking mode.
// The mode belongs to the open file, which other processes may share (a
// pipeline's next command reading what is left), so Close puts it back
// first, then closes both.
type pollingFile struct {
	*os.File
	of *os.File
}

func (f pollingFile) Close() error {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
	}
	return errors.Join(f.File.Close(), f.of.Close())
}
