package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=v1.2.3". Without it, the module version from
// the build information is used (a tagged `go install` sets it), else
// "devel".
var version = ""

func init() { extraCommands = append(extraCommands, (*app).versionCommand) }

// versionInfo is what `natscoord version` prints.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	NATSClient string `json:"nats_go,omitempty"`
	NATSServer string `json:"nats_server,omitempty"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "devel"
		}
		return v
	}
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, d := range bi.Deps {
		switch d.Path {
		case "github.com/nats-io/nats.go":
			v.NATSClient = d.Version
		case "github.com/nats-io/nats-server/v2":
			v.NATSServer = d.Version
		}
	}
	return v
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of natscoord and of the NATS libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if a.json {
				return writeJSON(a.stdout, v)
			}
			line := "natscoord " + v.Version
			if v.Commit != "" {
				line += " (commit " + short(v.Commit, 12)
				if v.Modified {
					line += ", modified"
				}
				line += ")"
			}
			line += ", " + v.Go + " " + v.Platform
			if v.NATSClient != "" {
				line += ", nats.go " + v.NATSClient
			}
			if v.NATSServer != "" {
				line += ", embedded nats-server " + v.NATSServer
			}
			_, err := fmt.Fprintln(a.stdout, line)
			return err
		},
	}
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
