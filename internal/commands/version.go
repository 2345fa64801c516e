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

// VersionReport is the JSON document of `version -o json`.
type VersionReport struct {
	Version string `json:"version"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Go      string `json:"go"`
}

func versionReport() VersionReport {
	return VersionReport{Version: Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
}

func (v VersionReport) String() string {
	return fmt.Sprintf("imagebump %s %s/%s %s\n", v.Version, v.OS, v.Arch, v.Go)
}

// NewCmdVersion builds `imagebump version`.
func NewCmdVersion(stdout io.Writer) *cobra.Command {
	output := "text"
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch output {
			case "json":
				return encodeJSON(stdout, versionReport())
			case "text":
				_, err := io.WriteString(stdout, versionReport().String())
				return err
			}
			return usageError(fmt.Errorf("-o %q: want text or json", output))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
