package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// A secret given as a flag is in the process's argv, which every user of
// the machine can read (ps, /proc). So each secret flag has a file flag
// and an environment variable as well: secretFlag resolves the three.

// secretFlag is one secret the CLI accepts as a flag, a file or an
// environment variable (in that order of precedence; the flag and the
// file together are refused).
type secretFlag struct {
	flag, fileFlag, env string // names, for messages
	value, file         string // as given
}

// help is the flag usage suffix that names the other two sources.
func (s *secretFlag) help() string {
	return fmt.Sprintf(" (visible in ps: prefer --%s or $%s)", s.fileFlag, s.env)
}

// resolve returns the secret: the flag's value, the file's content (one
// trailing newline removed), else the environment variable; "" when none
// is set.
func (s *secretFlag) resolve() (string, error) {
	switch {
	case s.value != "" && s.file != "":
		return "", fmt.Errorf("--%s and --%s exclude each other", s.flag, s.fileFlag)
	case s.value != "":
		return s.value, nil
	case s.file != "":
		data, err := os.ReadFile(s.file)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", s.fileFlag, err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
		if v == "" {
			return "", fmt.Errorf("--%s: %s is empty", s.fileFlag, s.file)
		}
		if strings.ContainsAny(v, "\r\n") {
			return "", errors.New("--" + s.fileFlag + ": the file holds more than one line")
		}
		return v, nil
	}
	return os.Getenv(s.env), nil
}

// passSecretsUsage is the usage of --pass-secrets, the one opt-in of
// every command that runs a child (work, lock, elect) to commandEnv's
// secrets.
const passSecretsUsage = "pass the NATS_* and NATSCOORD_* variables (server URL, credentials, dashboard token) on to CMD; by default they are removed"

// commandEnv is the environment natscoord passes on to a command it runs
// (work's task commands, the command of lock and elect): env without
// natscoord's and NATS's own variables (NATS_URL may hold a password,
// NATS_PASSWORD is one, NATS_CREDS names credentials, NATSCOORD_UI_TOKEN
// is the dashboard's token), unless pass (--pass-secrets). The command's
// own variables (the task's, the lock's) are added after.
func commandEnv(env []string, pass bool) []string {
	if pass {
		return env
	}
	kept := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "NATS_") || strings.HasPrefix(name, "NATSCOORD_") {
			continue
		}
		kept = append(kept, kv)
	}
	return kept
}
