package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveProcess starts `blindexec serve` with env and returns it with its
// output and address.
func serveProcess(t *testing.T, env ...string) (cmd *exec.Cmd, out *bytes.Buffer, addr string) {
	t.Helper()
	out, addr = &bytes.Buffer{}, freeAddr(t)
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	cmd = exec.Command(os.Args[0], "serve")
	cmd.Env = append(os.Environ(), append([]string{"BLINDEXEC_TEST_AS_CLI=1", "BLINDEXEC_ADDR=" + addr, "BLINDEXEC_LOG_LEVEL=warn",
		"BLINDEXEC_MASTER_KEY=" + key, "BLINDEXEC_ADMIN_TOKEN=spool-admin"}, env...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, addr
}

// exitOf waits up to 10 s for cmd to exit and returns its code (-1: it
// was still running and was killed).
func exitOf(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
		return -1
	}
}

// Issue 30, point 7: a spool directory serve cannot use is a settings
// error: serve exits at once with 2, naming BLINDEXEC_SPOOL_DIR, the path
// and the holder's pid, instead of answering 503 database_unavailable and
// retrying forever. The database need not be reachable for that.
func TestServeRefusesAnUnusableSpoolDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "spool-file")
	os.WriteFile(file, []byte("x"), 0o600)
	unreachable := "BLINDEXEC_DB=mysql:root@tcp(127.0.0.1:1)/nothing"
	for _, tc := range []struct {
		name, spool string
		want        []string
	}{
		{"a file", file, []string{`BLINDEXEC_SPOOL_DIR="` + file + `" (from the environment): not a directory`}},
		{"under a file", filepath.Join(file, "spool"), []string{"BLINDEXEC_SPOOL_DIR=", "not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cmd, out, _ := serveProcess(t, unreachable, "BLINDEXEC_SPOOL_DIR="+tc.spool)
			if code := exitOf(t, cmd); code != exitUsage {
				t.Fatalf("exit %d after %v, want %d at once:\n%s", code, time.Since(start), exitUsage, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}

	t.Run("held by another serve", func(t *testing.T) {
		spool := filepath.Join(dir, "shared-spool")
		db := "BLINDEXEC_DB=sqlite:" + filepath.Join(dir, "db")
		first, firstOut, addr := serveProcess(t, db, "BLINDEXEC_SPOOL_DIR="+spool)
		defer func() {
			first.Process.Signal(os.Interrupt)
			first.Wait()
		}()
		deadline := time.Now().Add(30 * time.Second)
		for {
			req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+addr+"/readyz", nil)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the first serve never became ready:\n%s", firstOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		second, out, _ := serveProcess(t, db, "BLINDEXEC_SPOOL_DIR="+spool)
		if code := exitOf(t, second); code != exitUsage {
			t.Fatalf("second serve on the spool: exit %d, want %d:\n%s", code, exitUsage, out)
		}
		want := fmt.Sprintf(`BLINDEXEC_SPOOL_DIR=%q (from the environment): in use by another process (pid %d): replicas on one host need a spool directory each`,
			spool, first.Process.Pid)
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	})
}

// operator75: serve without a master key is a settings error, told at once
// with exit 2 and the variable's name. Before, it retried an unreachable
// database forever, and on a reachable one migrated it and then stopped
// with "console: the master key is required to sign sessions".
func TestServeRefusesAMissingMasterKey(t *testing.T) {
	cmd, out, _ := serveProcess(t, "BLINDEXEC_DB=mysql:root@tcp(127.0.0.1:1)/nothing", "BLINDEXEC_MASTER_KEY=",
		"BLINDEXEC_SPOOL_DIR="+t.TempDir())
	if code := exitOf(t, cmd); code != exitUsage {
		t.Fatalf("exit %d, want %d at once:\n%s", code, exitUsage, out)
	}
	for _, want := range []string{"BLINDEXEC_MASTER_KEY is not set", "blindexec init"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// operator75: serve --no-migrate started before a migration job waits for
// the schema (503 meanwhile), then checks and records its master key as
// serve does. Before, it served the migrated database with its key never
// checked nor recorded: a replica with another key came up too, and each
// wrote credentials the other could not read.
func TestServeNoMigrateChecksItsKeyOnceMigrated(t *testing.T) {
	db := "BLINDEXEC_DB=sqlite:" + filepath.Join(t.TempDir(), "db")
	readyz := func(addr string) int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	a, outA, addrA := serveProcess(t, db, "BLINDEXEC_SPOOL_DIR="+t.TempDir(), "BLINDEXEC_NO_MIGRATE=true")
	defer func() { a.Process.Signal(os.Interrupt); exitOf(t, a) }()
	for deadline := time.Now().Add(10 * time.Second); readyz(addrA) != http.StatusServiceUnavailable; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("serve --no-migrate not answering 503 before the migration")
		}
	}
	migrate := exec.Command(os.Args[0], "migrate")
	migrate.Env = append(os.Environ(), "BLINDEXEC_TEST_AS_CLI=1", db)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(40 * time.Second); readyz(addrA) != http.StatusOK; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			a.Process.Signal(os.Interrupt)
			exitOf(t, a)
			t.Fatalf("serve --no-migrate not ready 40 s after the migration:\n%s", outA)
		}
	}
	other := "BLINDEXEC_MASTER_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	b, outB, _ := serveProcess(t, db, "BLINDEXEC_SPOOL_DIR="+t.TempDir(), "BLINDEXEC_NO_MIGRATE=true", other)
	if code := exitOf(t, b); code != exitFailure || !strings.Contains(outB.String(), "cannot decrypt this database's credentials") {
		t.Fatalf("a replica with another key: exit %d, want %d refusing the key:\n%s", code, exitFailure, outB)
	}
}
