package mcpserver

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// polled returns f as a reader the runtime's poller waits on, when f is a
// pipe or a socket in blocking mode (as a client starting `mcp serve
// --stdio` hands its pipe over): a read of a blocking descriptor holds a
// thread in the kernel while the client is quiet, and the runtime hands
// the thread's processor to another thread and back as lines come and go
// (about 15% of `mcp serve --stdio`'s CPU at concurrency, and 40% of its
// context switches: docs/benchmarks.md, issue 47's fifth pass). A
// terminal (whose mode the shell shares), a regular file (no poller waits
// on one), a descriptor already non-blocking or one that is also one of
// others (a socket handed over as stdin and stdout: inetd, systemd's
// StandardInput=socket) is returned as it is: the mode belongs to the open
// file, and a write to an unpolled descriptor made non-blocking fails with
// EAGAIN when the peer reads slowly (an answer or a log line lost).
func polled(f *os.File, others ...*os.File) io.ReadCloser {
	rc, err := f.SyscallConn() // its descriptor, left in its mode (Fd would make it blocking)
	if err != nil {
		return f
	}
	fd := -1
	rc.Control(func(d uintptr) { fd = int(d) })
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return f
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFIFO && kind != unix.S_IFSOCK {
		return f
	}
	for _, o := range others {
		if sharesFile(o, &st) {
			return f
		}
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		return f // polled by the runtime already, or another's to manage
	}
	// A descriptor of its own (f's stays f's to close), on the same open
	// file, whose mode the two share.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f
	}
	if unix.SetNonblock(dup, true) != nil {
		unix.Close(dup)
		return f
	}
	p := pollingFile{File: os.NewFile(uintptr(dup), f.Name()), of: f}
	if p.SetReadDeadline(time.Time{}) != nil { // the poller would not take it
		unix.SetNonblock(dup, false)
		p.File.Close()
		return f
	}
	return p
}

// pollingFile reads the open file of another (of) in non-blocking mode.
// The mode belongs to the open file, which other processes may share (a
// pipeline's next command reading what is left), so Close puts it back.
type pollingFile struct {
	*os.File
	of *os.File
}

// Close closes the duplicate first, then puts the mode back through of:
// a read of the duplicate begun once the open file is blocking again
// would wait in the kernel for the client's next line, and the
// duplicate's Close waits for that read to end.
func (f pollingFile) Close() error {
	err := f.File.Close()
	if rc, cerr := f.of.SyscallConn(); cerr == nil {
		rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
	}
	return errors.Join(err, f.of.Close())
}

// sharesFile reports whether o is the pipe or socket st describes: one
// has no name to be opened by again, so the same one is a descriptor of
// the same open file. A closed o shares nothing.
func sharesFile(o *os.File, st *unix.Stat_t) bool {
	rc, err := o.SyscallConn()
	if err != nil {
		return false
	}
	var ost unix.Stat_t
	var serr error = unix.EBADF
	if rc.Control(func(d uintptr) { serr = unix.Fstat(int(d), &ost) }) != nil || serr != nil {
		return false
	}
	return ost.Dev == st.Dev && ost.Ino == st.Ino
}
