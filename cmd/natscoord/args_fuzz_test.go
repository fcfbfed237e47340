package main

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseArgs feeds arbitrary command lines (NUL-separated arguments) to
// the CLI's parser, without running any command: finding the subcommand,
// parsing its flags, checking its positional arguments and turning the
// connection flags into nats options must return errors, never panic.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"", "--help", "serve\x00--port\x00-1", "--server\x00nats://127.0.0.1:4222\x00--json",
		"--creds\x00/nonexistent\x00serve", "demo\x00--bogus", "--timeout\x00-5s", "--tlsca\x00\x00serve",
		"serve\x00--store_dir\x00\xff\xfe", "--user\x00a\x00--password\x00b\x00--token\x00c",
		"--bogus\x00ledger\x00ls", "-\x00-s", "ledger\x00lss", "lock\x00k\x00--\x00sh", "-\xff", "---x=1\x00elect",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		if len(args) > 64 {
			return
		}
		var out bytes.Buffer
		a := &app{stdout: &out, stderr: &out}
		root := a.rootCommand()
		_ = checkArgs(root, args)
		cmd, rest, err := root.Find(args)
		if err != nil {
			return
		}
		if err := cmd.ParseFlags(rest); err != nil {
			return
		}
		_ = cmd.ValidateArgs(cmd.Flags().Args())
		_ = a.conn.url()
		_, _ = a.conn.options()
	})
}
