package commands

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/imagebump/imagebump/internal/testkit/testgit"
	"github.com/imagebump/imagebump/internal/testkit/testregistry"
	"github.com/imagebump/imagebump/serve"
)

// TestServeShardsProcesses runs three `imagebump serve` processes on one
// config of nine targets, with --shard 0/3, 1/3 and 2/3 (the second as
// auto/3 from a StatefulSet-like host name): each target is bumped
// exactly once, by the one process whose shard owns it, and the others
// never run it.
func TestServeShardsProcesses(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := &testregistry.Server{Host: strings.TrimPrefix(srv.URL, "http://"), URL: srv.URL, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	reg.Push(t, "acme/app", "1.0.0", "1.1.0")

	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "registries: [{host: %q, insecure: true}]\nimages: [{name: app, repository: %s, policy: {semver: \">=1.0.0\"}}]\ntargets:\n", reg.Host, reg.Repo("acme/app"))
	bares := map[string]string{}
	before := map[string]string{}
	for i := range 9 {
		name := "t" + strconv.Itoa(i)
		bares[name] = testgit.NewBare(t, map[string]string{"app.yaml": "image: " + reg.Repo("acme/app") + ":1.0.0 # {\"$imagepolicy\": \"default:app\"}\n"})
		before[name] = strings.TrimSpace(testgit.Git(t, bares[name], "rev-parse", "refs/heads/main"))
		fmt.Fprintf(&cfg, "  - {name: %s, git: {url: \"file://%s\", branch: main}, schedule: 2s}\n", name, bares[name])
	}
	cfgFile := writeFile(t, dir, "imagebump.yaml", cfg.String())

	procs := []*serveProcess{
		startServe(t, "-c", cfgFile, "--workdir", filepath.Join(dir, "work0"), "--shard", "0/3"),
		startServeEnv(t, []string{"HOSTNAME=imagebump-1"}, "-c", cfgFile, "--workdir", filepath.Join(dir, "work1"), "--shard", "auto/3"),
		startServe(t, "-c", cfgFile, "--workdir", filepath.Join(dir, "work2"), "--shard=2/3"),
	}
	head := func(name string) string {
		return strings.TrimSpace(testgit.Git(t, bares[name], "rev-parse", "refs/heads/main"))
	}
	waitUntil(t, 90*time.Second, "every target's bump", func() bool {
		for name := range bares {
			if head(name) == before[name] {
				return false
			}
		}
		return true
	})
	// A few more cycles of every process: nothing more moves.
	runs := make([]int, len(procs))
	for i, p := range procs {
		for _, ts := range p.status(t).Targets {
			runs[i] += ts.CyclesRun
		}
	}
	waitUntil(t, 60*time.Second, "two more cycles per process", func() bool {
		for i, p := range procs {
			n := 0
			for _, ts := range p.status(t).Targets {
				n += ts.CyclesRun
			}
			if n < runs[i]+2*len(p.status(t).Targets) {
				return false
			}
		}
		return true
	})

	owner := map[string]int{}
	for i, p := range procs {
		st := p.status(t)
		if st.Shard == nil || st.Shard.Index != i || st.Shard.Count != 3 || st.Shard.TargetsConfigured != 9 {
			t.Errorf("process %d: shard %+v, want %d of 3 over 9 targets", i, st.Shard, i)
		}
		for _, ts := range st.Targets {
			if prev, dup := owner[ts.Name]; dup {
				t.Errorf("%s runs in processes %d and %d", ts.Name, prev, i)
			}
			owner[ts.Name] = i
			if want := serve.ShardOf(ts.Name, 3); want != i {
				t.Errorf("process %d runs %s, whose shard is %d", i, ts.Name, want)
			}
			pushed := 0
			for _, c := range ts.Cycles {
				if c.Pushed {
					pushed++
				}
			}
			if pushed != 1 {
				t.Errorf("%s: %d pushing cycles in process %d, want 1: %+v", ts.Name, pushed, i, ts.Cycles)
			}
		}
		if got := p.metric(t, "imagebump_shard_info", "index", strconv.Itoa(i), "count", "3"); got != 1 {
			t.Errorf("process %d: imagebump_shard_info = %v", i, got)
		}
		if got := p.metric(t, "imagebump_targets"); got != float64(len(st.Targets)) {
			t.Errorf("process %d: imagebump_targets = %v, want %d", i, got, len(st.Targets))
		}
	}
	var names []string
	for name := range owner {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"}; !slices.Equal(names, want) {
		t.Errorf("targets run: %v, want %v", names, want)
	}
	for name, bare := range bares {
		if n := strings.TrimSpace(testgit.Git(t, bare, "rev-list", "--count", "refs/heads/main")); n != "2" {
			t.Errorf("%s has %s commits, want 2 (the initial one and one bump)", name, n)
		}
		if got, _ := testgit.ReadFile(t, bare, "main", "app.yaml"); !strings.Contains(got, ":1.1.0 ") {
			t.Errorf("%s: app.yaml is %q", name, got)
		}
	}
}
