package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// refuseUnknownSubcommands makes every command group (a command that has
// subcommands and does nothing itself) print its help when called alone
// and fail, naming the word, when called with one it does not know.
// Cobra's default for a group below the root is to print help and exit 0,
// which hides a typo such as `ledger lss` from scripts.
func refuseUnknownSubcommands(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownCommand(cmd, args[0])
		}
	}
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
}

// unknownCommand is the error for a word that names no subcommand of cmd,
// with the closest subcommand when one is near.
func unknownCommand(cmd *cobra.Command, word string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	hint := ""
	if s := cmd.SuggestionsFor(word); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return fmt.Errorf("unknown command %q for %q%s", word, cmd.CommandPath(), hint)
}

// checkArgs walks the command line down the command tree before cobra
// runs it and refuses the first flag that the command reached so far does
// not define. Cobra cannot tell whether an unknown flag takes a value, so
// it takes the next word as that value: `--bogus ledger ls` became
// `unknown command "ls"` instead of naming --bogus. The walk stops at
// "--" and at the first word that is not a subcommand (a positional
// argument, which the command itself checks).
func checkArgs(root *cobra.Command, args []string) error {
	c := root
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			return nil
		case arg == "-" || !strings.HasPrefix(arg, "-"):
			sub := subcommand(c, arg)
			if sub == nil {
				return nil
			}
			c = sub
			continue
		}
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag() // the root's --version
		_ = c.InheritedFlags()     // merges the parents' persistent flags into c.Flags()
		fs := c.Flags()
		var (
			f      *pflag.Flag
			inline bool
		)
		if name, ok := strings.CutPrefix(arg, "--"); ok {
			name, _, inline = strings.Cut(name, "=")
			if f = fs.Lookup(name); f == nil {
				return fmt.Errorf("unknown flag: --%s", name)
			}
		} else {
			short := arg[1:2]
			if f = fs.ShorthandLookup(short); f == nil {
				return fmt.Errorf("unknown shorthand flag: %q in %s", short, arg)
			}
			inline = len(arg) > 2
		}
		if f.NoOptDefVal == "" && !inline {
			i++ // the flag's value is the next word
		}
	}
	return nil
}

// subcommand returns c's subcommand called name (or one of its aliases).
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}
