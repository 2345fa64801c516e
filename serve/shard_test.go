package serve

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/imagebump/imagebump/config"
)

var update = flag.Bool("update", false, "rewrite testdata/shards.txt and docs/images/status-page.png")

// TestParseShard reads --shard values, auto/N with the host names a
// StatefulSet gives its pods.
func TestParseShard(t *testing.T) {
	for _, tt := range []struct {
		spec, host string
		want       Shard
		err        string
	}{
		{"0/3", "", Shard{0, 3}, ""},
		{"2/3", "ignored-7", Shard{2, 3}, ""},
		{"0/1", "", Shard{0, 1}, ""},
		{"auto/3", "imagebump-2", Shard{2, 3}, ""},
		{"auto/3", "imagebump-shard-0", Shard{0, 3}, ""},
		{"auto/12", "imagebump-11", Shard{11, 12}, ""},
		{"auto/3", "imagebump-3", Shard{}, "ordinal 3, not below 3"},
		{"auto/3", "imagebump", Shard{}, "ends in no -ORDINAL"},
		{"auto/3", "", Shard{}, "ends in no -ORDINAL"},
		{"3/3", "", Shard{}, "I must be a whole number from 0 to 2"},
		{"-1/3", "", Shard{}, "I must be a whole number from 0 to 2"},
		{"1/0", "", Shard{}, "N must be a whole number of 1 or more"},
		{"1", "", Shard{}, "want I/N"},
		{"a/b", "", Shard{}, "N must be"},
		{"", "", Shard{}, "want I/N"},
	} {
		t.Run(tt.spec+" "+tt.host, func(t *testing.T) {
			got, err := ParseShard(tt.spec, tt.host)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseShard = %v, %v; want an error saying %q", got, err, tt.err)
				}
				if tt.host == "imagebump" && !errors.Is(err, ErrNoOrdinal) {
					t.Errorf("error %v is not ErrNoOrdinal", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseShard = %v, %v; want %v", got, err, tt.want)
			}
			if got.String() != fmt.Sprintf("%d/%d", tt.want.Index, tt.want.Count) {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

// fnv1a is FNV-1a (32 bits) written from its definition, to check
// ShardOf against.
func fnv1a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// TestShardOfIsStable checks ShardOf against FNV-1a's definition and
// against testdata/shards.txt, written once: a change of the hash would
// move every fleet's targets between replicas on upgrade, so it must show
// up here.
func TestShardOfIsStable(t *testing.T) {
	var lines []string
	for _, n := range []int{2, 3, 5, 16} {
		for _, name := range []string{"default", "prod", "staging", "eu-west-1", "team-a-apps", "t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"} {
			got := ShardOf(name, n)
			if want := int(fnv1a(name) % uint32(n)); got != want {
				t.Errorf("ShardOf(%q, %d) = %d, FNV-1a says %d", name, n, got, want)
			}
			lines = append(lines, fmt.Sprintf("%s %d %d", name, n, got))
		}
	}
	golden := filepath.Join("testdata", "shards.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (go test ./serve -run TestShardOfIsStable -update writes it)", err)
	}
	defer f.Close()
	var want []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if diff := cmp.Diff(lines, want); diff != "" {
		t.Errorf("shards (-got +pinned):\n%s", diff)
	}
}

// TestShardSpread checks that the hash spreads names evenly enough: 3000
// target names over 3 shards, each within 10% of a third.
func TestShardSpread(t *testing.T) {
	counts := make([]int, 3)
	for i := range 3000 {
		counts[ShardOf("target-"+strconv.Itoa(i), 3)]++
	}
	for i, c := range counts {
		if c < 900 || c > 1100 {
			t.Errorf("shard %d got %d of 3000 names: %v", i, c, counts)
		}
	}
}

// TestShardOwnership builds three Servers on one config of nine targets,
// one per shard: they own disjoint sets that cover the config, their
// status says which shard they are and where the others' targets are, and
// their metrics say so too.
func TestShardOwnership(t *testing.T) {
	var b strings.Builder
	b.WriteString("images: [{name: app, repository: ghcr.io/acme/app, policy: {semver: \">=1\"}}]\ntargets:\n")
	for i := range 9 {
		fmt.Fprintf(&b, "  - {name: t%d, git: {url: \"https://git.example/t%d.git\"}}\n", i, i)
	}
	cfg, err := config.Parse([]byte(b.String()), "imagebump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range 3 {
		s, err := New(Options{Config: cfg, Workdir: t.TempDir(), Shard: Shard{i, 3}})
		if err != nil {
			t.Fatal(err)
		}
		st := s.Status()
		if st.Shard == nil || st.Shard.Index != i || st.Shard.Count != 3 || st.Shard.TargetsConfigured != 9 {
			t.Fatalf("shard %d: status shard %+v", i, st.Shard)
		}
		if len(st.Targets)+len(st.Shard.Elsewhere) != 9 {
			t.Errorf("shard %d: %d owned and %d elsewhere, want 9 in all", i, len(st.Targets), len(st.Shard.Elsewhere))
		}
		for _, ts := range st.Targets {
			if ShardOf(ts.Name, 3) != i {
				t.Errorf("shard %d runs %s, whose shard is %d", i, ts.Name, ShardOf(ts.Name, 3))
			}
			seen[ts.Name]++
		}
		for _, e := range st.Shard.Elsewhere {
			if e.Shard == i || e.Shard != ShardOf(e.Name, 3) {
				t.Errorf("shard %d lists %+v elsewhere", i, e)
			}
		}
		m := scrape(t, s.Handler())
		if v, _ := metricValue(m, "imagebump_shard_info", "index", strconv.Itoa(i), "count", "3"); v != 1 {
			t.Errorf("shard %d: imagebump_shard_info = %v", i, v)
		}
		if v, _ := metricValue(m, "imagebump_targets"); v != float64(len(st.Targets)) {
			t.Errorf("shard %d: imagebump_targets = %v, want %d", i, v, len(st.Targets))
		}
		if v, _ := metricValue(m, "imagebump_targets_configured"); v != 9 {
			t.Errorf("shard %d: imagebump_targets_configured = %v, want 9", i, v)
		}
	}
	for i := range 9 {
		if n := seen["t"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("t%d is owned by %d shards, want 1", i, n)
		}
	}
	if _, err := New(Options{Config: cfg, Workdir: t.TempDir(), Shard: Shard{3, 3}}); err == nil {
		t.Error("New accepted shard 3/3")
	}
}

// TestWebhookForAnotherShard sends a push of an image that only a target
// of another shard watches: it is accepted (202) and ignored, counted as
// not_owned; one this shard watches is triggered.
func TestWebhookForAnotherShard(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "token"), "tok\n")
	cfgFile := filepath.Join(dir, "imagebump.yaml")
	writeTestFile(t, cfgFile, `images:
  - {name: a:app, repository: ghcr.io/acme/a, policy: {semver: ">=1"}}
  - {name: b:app, repository: ghcr.io/acme/b, policy: {semver: ">=1"}}
targets:
  - {name: t0, git: {url: "https://git.example/t0.git"}, schedule: 1h, policies: ["a:*"]}
  - {name: t1, git: {url: "https://git.example/t1.git"}, schedule: 1h, policies: ["b:*"]}
webhooks: [{name: r, tokenFile: token}]
`)
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	// t0 is shard 0 of 3 and t1 shard 1 (testdata/shards.txt).
	s, err := New(Options{Config: cfg, Workdir: t.TempDir(), Shard: Shard{0, 3}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(repo string) hookResponse {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/hook/r", strings.NewReader(`{"repository": "`+repo+`", "tag": "1.0.0"}`))
		req.Header.Set("Authorization", "Bearer tok")
		s.Handler().ServeHTTP(rec, req)
		var resp hookResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || rec.Code != http.StatusAccepted {
			t.Fatalf("answer %d %s", rec.Code, rec.Body)
		}
		return resp
	}
	if got := send("ghcr.io/acme/b"); got.Result != hookNotOwned || len(got.Targets) != 0 || !slices.Equal(got.NotOwned, []string{"ghcr.io/acme/b:1.0.0"}) {
		t.Errorf("another shard's image: %+v", got)
	}
	if got := send("ghcr.io/acme/a"); got.Result != hookTriggered || !slices.Equal(got.Targets, []string{"t0"}) {
		t.Errorf("this shard's image: %+v", got)
	}
	m := scrape(t, s.Handler())
	if v, _ := metricValue(m, "imagebump_webhooks_total", "hook", "r", "result", hookNotOwned); v != 1 {
		t.Errorf("not_owned requests: %v, want 1", v)
	}
	if v, _ := metricValue(m, "imagebump_webhook_images_total", "hook", "r", "result", hookNotOwned); v != 1 {
		t.Errorf("not_owned images: %v, want 1", v)
	}
}
