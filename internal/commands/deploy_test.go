package commands

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/imagebump/imagebump/config"
)

// TestDeployManifests checks that the shipped Kubernetes manifests parse,
// that their embedded config loads, and that the container's arguments are
// ones imagebump accepts.
func TestDeployManifests(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "cronjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var cfgText string
	var args []string
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
			Spec struct {
				JobTemplate struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct {
									Args []string `yaml:"args"`
								} `yaml:"containers"`
							} `yaml:"spec"`
						} `yaml:"template"`
					} `yaml:"spec"`
				} `yaml:"jobTemplate"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch doc.Kind {
		case "ConfigMap":
			cfgText = doc.Data["imagebump.yaml"]
		case "CronJob":
			args = doc.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
		}
	}
	if _, err := config.Parse([]byte(cfgText), "cronjob.yaml#imagebump.yaml"); err != nil {
		t.Errorf("the ConfigMap's config does not load: %v", err)
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("container args = %q, want a run command", args)
	}
	called := false
	root := NewCmdRoot(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		if c.Name() == "run" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(NewCmdRun(&globalOptions{}, io.Discard, func(context.Context, *RunOptions, io.Writer) error {
		called = true
		return nil
	}))
	root.SetArgs(args)
	if err := root.Execute(); err != nil || !called {
		t.Errorf("imagebump %s: err %v, ran %v", strings.Join(args, " "), err, called)
	}
}
