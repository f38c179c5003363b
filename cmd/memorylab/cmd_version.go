package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

func versionCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print the version, the VCS revision it was built from, and the Go version",
		UsageText: "memorylab version   (same as memorylab --version)",
		Description: "The figures come from the binary's build information: `go install …@VERSION` stamps the\n" +
			"module version, a build from a clone stamps the commit, its time and whether the tree was dirty.",
		Action: func(c *cli.Context) error {
			bi, ok := debug.ReadBuildInfo()
			fmt.Fprint(env.Out, versionText(bi, ok))
			return nil
		},
	}
}

// versionText renders what the Go toolchain stamped into the binary: the
// module version, the VCS revision with its time and dirty flag, and the Go
// version. Nothing here is maintained by hand.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "memorylab (no build information)\n"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "memorylab %s\n", version)
	if rev := set["vcs.revision"]; rev != "" {
		dirty := ""
		if set["vcs.modified"] == "true" {
			dirty = " (dirty)"
		}
		fmt.Fprintf(&b, "revision: %s%s\n", rev, dirty)
		if t := set["vcs.time"]; t != "" {
			fmt.Fprintf(&b, "commit time: %s\n", t)
		}
	} else {
		b.WriteString("revision: unknown (built without VCS information)\n")
	}
	fmt.Fprintf(&b, "go: %s\n", bi.GoVersion)
	return b.String()
}
