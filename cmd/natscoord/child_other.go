//go:build !unix

package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
)

// runUnder needs Unix process groups and signals.
func runUnder(context.Context, string, []string, []string, io.Reader, io.Writer, io.Writer) error {
	return errors.New("running a command under a lock or a leadership needs a Unix system")
}

// commandAfterDash: see child.go.
func commandAfterDash(cmd *cobra.Command, args []string, want int) ([]string, []string, error) {
	if len(args) != want || cmd.ArgsLenAtDash() >= 0 {
		return nil, nil, errors.New("running a command under a lock or a leadership needs a Unix system")
	}
	return args, nil, nil
}
