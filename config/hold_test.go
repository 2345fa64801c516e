package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateHold = flag.Bool("update", false, "rewrite the golden files of testdata/hold")

// TestHoldGolden writes and removes holds on configs of every shape and
// compares with golden files: only the hold's bytes may change, and
// releasing gives the original back.
func TestHoldGolden(t *testing.T) {
	for _, tt := range []struct {
		input, policy string
		hold          Hold
	}{
		{"block.yaml", "apps:web", Hold{Reason: "incident 42"}},
		{"block.yaml", "apps:worker", Hold{Reason: "freeze", Until: "2026-12-24T00:00:00Z"}},
		{"flow.yaml", "apps:web", Hold{Reason: `quotes " and \ and: colons`}},
		{"flow.yaml", "apps:worker", Hold{Reason: "until", Until: "2026-12-24"}},
		{"crlf-no-eol.yaml", "web", Hold{Reason: "crlf"}},
		{"held.yaml", "apps:web", Hold{Reason: "new reason"}},
		{"held.yaml", "apps:api", Hold{Reason: "replaced"}},
		// A hold there is replaced in place and in its style; the comment
		// on its key's line stays, and so does the next key's.
		{"held.yaml", "apps:worker", Hold{Reason: "new", Until: "2027-01-01"}},
		// The hold goes before the empty document a trailing --- opens.
		{"trailing-separator.yaml", "apps:worker", Hold{Reason: "last"}},
	} {
		name := strings.TrimSuffix(tt.input, ".yaml") + "-" + strings.ReplaceAll(tt.policy, ":", "_")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "hold", tt.input))
			if err != nil {
				t.Fatal(err)
			}
			got, err := SetHold(in, tt.input, tt.policy, tt.hold)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "hold", "want", name+".yaml")
			if *updateHold {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(got), string(want)); diff != "" {
				t.Errorf("SetHold (-got +want):\n%s", diff)
			}
			cfg, err := Parse(got, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			im, _ := cfg.Image(tt.policy)
			if im.Hold == nil || im.Hold.Reason != tt.hold.Reason || im.Hold.Until != tt.hold.Until {
				t.Errorf("the held config reads hold %+v, want %+v", im.Hold, tt.hold)
			}
			back, err := ClearHold(got, tt.input, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			// A file without a final line break gets one with the hold.
			if tt.input != "held.yaml" && strings.TrimRight(string(back), "\r\n") != strings.TrimRight(string(in), "\r\n") {
				t.Errorf("release did not give the original back:\n%s", cmp.Diff(string(back), string(in)))
			}
			if _, err := ClearHold(back, tt.input, tt.policy); !errors.Is(err, ErrNotHeld) {
				t.Errorf("a second release = %v, want ErrNotHeld", err)
			}
		})
	}
}

func TestHoldRefusals(t *testing.T) {
	cfg := []byte("images:\n  - {name: a, repository: r, policy: {semver: \">=1\"}}\n")
	for _, tt := range []struct {
		name, policy string
		hold         Hold
		want         string
	}{
		{"unknown policy", "b", Hold{Reason: "x"}, "has no image policy default:b (it has: a)"},
		{"no reason", "a", Hold{}, "needs a reason"},
		{"bad until", "a", Hold{Reason: "x", Until: "tomorrow"}, `"tomorrow" is not a time`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SetHold(cfg, "imagebump.yaml", tt.policy, tt.hold)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("SetHold = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSetHoldOverBlockScalar: a hold whose last value is a block scalar
// with a blank line is replaced all the same (written anew after the
// entry): the in-place edit left the scalar's rest behind and failed.
func TestSetHoldOverBlockScalar(t *testing.T) {
	in := "images:\n  - name: apps:web\n    repository: ghcr.io/acme/web\n    policy: {semver: \">=1\"}\n    hold:\n      until: \"2027-01-01\"\n      reason: |\n        line one\n\n        line two\n"
	out, err := SetHold([]byte(in), "c.yaml", "apps:web", Hold{Reason: "new", Until: "2027-02-02"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(out, "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if im, _ := cfg.Image("apps:web"); im.Hold == nil || im.Hold.Reason != "new" || im.Hold.Until != "2027-02-02" {
		t.Errorf("hold after SetHold: %+v\n%s", im.Hold, out)
	}
}
