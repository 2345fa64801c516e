package commands

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with
// -ldflags "-X github.com/imagebump/imagebump/internal/commands.version=v1.2.3".
var version = ""

// Version returns imagebump's version: the one set at build time, else the
// module version Go recorded, else "devel".
func Version() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// NewCmdVersion builds `imagebump version`.
func NewCmdVersion(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(stdout, "imagebump %s %s/%s %s\n", Version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}
}
