package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func runArgs(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestCLI(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr bool
		stdout  string
		stderr  string
	}{
		{name: "help", args: []string{"--help"}, stdout: "check-config"},
		{name: "version", args: []string{"version"}, stdout: "goodput-exporter, version"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: true, stderr: "unknown flag --bogus"},
		{name: "check good", args: []string{"check-config", "../../config/testdata/good.yml"}, stdout: "ok (2 targets)"},
		{name: "check bad", args: []string{"check-config", "../../config/testdata/invalid-target.yml"}, wantErr: true,
			stdout: "invalid-target.yml: line 4: targets[0].engine: \"tfserving\" is not one of"},
		{name: "timeout over interval", args: []string{"serve", "--collect.interval=1s", "--collect.timeout=2s"}, wantErr: true,
			stderr: "must be positive and not longer than --collect.interval"},
		{name: "bad target flag", args: []string{"--target", "nourl"}, wantErr: true, stderr: "want NAME=URL"},
		{name: "bad config file", args: []string{"--config.file", "../../config/testdata/invalid-size.yml"}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := runArgs(c.args...)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v\nstdout: %s\nstderr: %s", err, out, errOut)
			}
			if !strings.Contains(out, c.stdout) {
				t.Errorf("stdout lacks %q:\n%s", c.stdout, out)
			}
			if !strings.Contains(errOut, c.stderr) {
				t.Errorf("stderr lacks %q:\n%s", c.stderr, errOut)
			}
		})
	}
}

func TestServeBadConfigSaysWhy(t *testing.T) {
	_, _, err := runArgs("--config.file", "../../config/testdata/invalid-size.yml", "--web.listen-address=127.0.0.1:0")
	if err == nil || errors.Is(err, errReported) || !strings.Contains(err.Error(), `line 2: "lots" is not a positive size`) {
		t.Fatalf("err = %v", err)
	}
}

// A taken port fails the start at once instead of leaving a daemon that
// collects with nothing serving it.
func TestServeFailsOnATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		_, _, err := runArgs("--web.listen-address="+l.Addr().String(), "--target", "a=http://127.0.0.1:1/metrics", "--gpu.backend=none")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "listening on") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return with its port taken")
	}
}
