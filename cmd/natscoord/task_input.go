package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// maxTaskInput bounds what `--task @FILE` and `--task -` read, so a wrong
// file (a disk image, /dev/zero) fails fast instead of filling memory.
// It is far above what a NATS server accepts in one message (1 MiB by
// default, 64 MiB at most), which the server itself then enforces.
const maxTaskInput = 64 << 20

// readTaskArg resolves the value of --task: "@FILE" reads FILE, "-" reads
// stdin, anything else is the JSON text itself. The result is parsed by
// parseTask. A payload given this way has no limit from the shell's
// argument size.
func readTaskArg(stdin io.Reader, arg string) (any, error) {
	var (
		data []byte
		err  error
		from string
	)
	switch {
	case arg == "-":
		if stdin == nil {
			return nil, fmt.Errorf("--task -: no stdin")
		}
		data, err = io.ReadAll(io.LimitReader(stdin, maxTaskInput+1))
		from = "stdin"
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		if name == "" {
			return nil, fmt.Errorf("--task @: no file name after @")
		}
		var f *os.File
		if f, err = os.Open(name); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxTaskInput+1))
			_ = f.Close()
		}
		from = name
	default:
		return parseTask(arg)
	}
	if err != nil {
		return nil, fmt.Errorf("--task %s: %w", arg, err)
	}
	if len(data) > maxTaskInput {
		return nil, fmt.Errorf("--task %s: more than %d MiB", arg, maxTaskInput>>20)
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, fmt.Errorf("--task %s: %s is empty (use --task null for no payload)", arg, from)
	}
	v, err := parseTask(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return v, nil
}
