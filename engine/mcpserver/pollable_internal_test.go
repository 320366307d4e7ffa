package mcpserver

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nonBlocking reports the O_NONBLOCK flag of the open file fd refers to.
func nonBlocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestPolled: a blocking pipe, as a client hands `mcp serve --stdio` its
// stdin, is read through the poller (so that Close ends a read waiting on
// a quiet client) and is blocking again after Close, for whoever shares
// it; a regular file and a descriptor already non-blocking are left as
// they are.
func TestPolled(t *testing.T) {
	t.Run("a blocking pipe", func(t *testing.T) {
		var fds [2]int
		if err := unix.Pipe(fds[:]); err != nil { // blocking, as a child process gets its stdin
			t.Fatal(err)
		}
		r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
		defer w.Close()
		shared, err := unix.Dup(fds[0])
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(shared)
		if nonBlocking(t, shared) {
			t.Fatal("the pipe is not blocking to begin with")
		}
		in := polled(r)
		if _, ok := in.(pollingFile); !ok {
			t.Fatalf("polled(pipe) = %T, want the pipe polled", in)
		}
		if !nonBlocking(t, shared) {
			t.Fatal("the polled pipe is still blocking")
		}
		io.WriteString(w, "a line\n")
		buf := make([]byte, 64)
		if n, err := in.Read(buf); err != nil || string(buf[:n]) != "a line\n" {
			t.Fatalf("Read = %q, %v", buf[:n], err)
		}
		read := make(chan error, 1)
		go func() { _, err := in.Read(buf); read <- err }() // nothing comes
		time.Sleep(10 * time.Millisecond)
		if err := in.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-read:
			if err == nil {
				t.Fatal("a read waiting on a quiet pipe returned no error at Close")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not end a read waiting on a quiet pipe")
		}
		if nonBlocking(t, shared) {
			t.Fatal("the pipe is not blocking again after Close")
		}
	})
	t.Run("a regular file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "in"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if in := polled(f); in != io.ReadCloser(f) {
			t.Fatalf("polled(file) = %T, want the file as it is", in)
		}
	})
	t.Run("a pipe already non-blocking", func(t *testing.T) {
		r, w, err := os.Pipe() // polled by the runtime already
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		if in := polled(r); in != io.ReadCloser(r) {
			t.Fatalf("polled(non-blocking pipe) = %T, want the pipe as it is", in)
		}
	})
}

// TestPolledSharedSocket: a socket handed over as stdin and stdout at once
// (inetd, systemd's StandardInput=socket, socat's exec) is one open file
// whose mode the two share; made non-blocking for stdin's poller, stdout
// (which the runtime does not poll) would fail a write with EAGAIN as soon
// as the client reads slower than answers come, and an answer would be
// lost. Such a stdin is left blocking, and so is its stdout.
func TestPolledSharedSocket(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	out, err := unix.Dup(fds[0]) // stdout, the same open file as stdin
	if err != nil {
		t.Fatal(err)
	}
	in, stdout := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(out), "stdout")
	defer in.Close()
	defer stdout.Close()
	if got := polled(in, stdout); got != io.ReadCloser(in) {
		got.Close()
		t.Fatalf("polled(socket shared with stdout) = %T, want the socket as it is", got)
	}
	if nonBlocking(t, out) {
		t.Fatal("stdout was made non-blocking with stdin")
	}
	// A pipe of its own for stdin, the socket for stdout: polled.
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	got := polled(os.NewFile(uintptr(p[0]), "stdin"), stdout)
	defer got.Close()
	if _, ok := got.(pollingFile); !ok {
		t.Fatalf("polled(pipe of its own) = %T, want the pipe polled", got)
	}
}

// TestPolledCloseWhileReading: Close while the client is still writing
// and a read runs. Putting the mode back before the duplicate was closed
// let a read begun in between wait in the kernel for a line that never
// came (the client stops as the mode is back), and Close waited for that
// read: the server hung at its end. The window is short: the test repeats
// the race (without the fix, one run of it in two or three hung).
func TestPolledCloseWhileReading(t *testing.T) {
	if testing.Short() {
		t.Skip("a race repeated")
	}
	for round := range 1000 {
		var fds [2]int
		if err := unix.Pipe(fds[:]); err != nil {
			t.Fatal(err)
		}
		shared, err := unix.Dup(fds[0]) // the open file, as the client sees its mode
		if err != nil {
			t.Fatal(err)
		}
		in := polled(os.NewFile(uintptr(fds[0]), "stdin"))
		unix.SetNonblock(fds[1], true) // a full pipe does not hold the client once nothing reads
		wrote := make(chan struct{})
		go func() { // the client writes until stdin is blocking again
			defer close(wrote)
			for b := []byte("x"); ; {
				if flags, err := unix.FcntlInt(uintptr(shared), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK == 0 {
					return
				}
				unix.Write(fds[1], b)
			}
		}()
		var reads atomic.Int64
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			buf := make([]byte, 1)
			for {
				if _, err := in.Read(buf); err != nil {
					return
				}
				reads.Add(1)
			}
		}()
		for reads.Load() < 20 { // reading
			runtime.Gosched()
		}
		closed := make(chan struct{})
		go func() { in.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			unix.Close(fds[1]) // ends the read, and Close
			<-closed
			t.Fatalf("round %d: Close waited for a read of a quiet client", round)
		}
		<-wrote
		<-readDone
		unix.Close(fds[1])
		unix.Close(shared)
	}
}
