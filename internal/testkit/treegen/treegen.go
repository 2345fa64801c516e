// Package treegen writes large, deterministic repository trees full of the
// YAML files imagebump edits, with $imagepolicy markers on a known share of
// them, for benchmarks and load tests.
//
// A tree is a fleet repository as platform teams keep them: Kubernetes
// manifests under clusters/ENV/TEAM/APP (multi-document Deployments,
// CronJobs, Services, ConfigMaps, kustomizations with images:, some named
// Kustomization), Helm charts with values files, docker-compose stacks, CI
// files whose root is a list, dashboards in JSON, and READMEs and notes. It
// is spelled the many ways real files are: 2- and 4-space indentation,
// indented and kubectl-style sequences, CRLF line endings, a BOM, quoted
// and plain scalars, comments and block scalars.
//
// About Options.MarkedFraction of the YAML files carry markers, in all four
// forms, for Options.Policies image policies whose pinned tags are older
// than the newest tag Repositories publishes, so a plan over the tree finds
// changes. A few YAML files with markers do not parse. Generate returns
// Stats with the counts a plan over the tree should report, Config the
// matching imagebump.yaml and Repositories what the registry must serve.
package treegen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Defaults for the zero values of Options.
const (
	DefaultFiles          = 10000
	DefaultMarkedFraction = 0.10
	DefaultPolicies       = 200
	DefaultInvalidFiles   = 20
	DefaultRegistryHost   = "registry.example.com"
)

// Options shape a tree. The zero value asks for the defaults.
type Options struct {
	// Files is how many files the tree holds; zero means DefaultFiles.
	Files int
	// MarkedFraction is the share of YAML files with markers; zero means
	// DefaultMarkedFraction, a negative value means none.
	MarkedFraction float64
	// Policies is how many image policies the markers name; zero means
	// DefaultPolicies.
	Policies int
	// InvalidFiles is how many YAML files with markers fail to parse; zero
	// means DefaultInvalidFiles, a negative value means none.
	InvalidFiles int
	// RegistryHost is the host[:port] of the registry every policy's
	// repository lives on; empty means DefaultRegistryHost.
	RegistryHost string
	// Seed picks the tree; the same Options give the same bytes.
	Seed int64
}

// withDefaults fills in the zero values.
func (o Options) withDefaults() Options {
	if o.Files <= 0 {
		o.Files = DefaultFiles
	}
	switch {
	case o.MarkedFraction == 0:
		o.MarkedFraction = DefaultMarkedFraction
	case o.MarkedFraction < 0:
		o.MarkedFraction = 0
	case o.MarkedFraction > 1:
		o.MarkedFraction = 1
	}
	if o.Policies <= 0 {
		o.Policies = DefaultPolicies
	}
	switch {
	case o.InvalidFiles == 0:
		o.InvalidFiles = DefaultInvalidFiles
	case o.InvalidFiles < 0:
		o.InvalidFiles = 0
	}
	if o.RegistryHost == "" {
		o.RegistryHost = DefaultRegistryHost
	}
	return o
}

// Stats describe a generated tree: what grep and a plan over it should find.
type Stats struct {
	// Files counts every file written.
	Files int
	// YAMLFiles counts the files imagebump reads: *.yaml, *.yml and
	// Kustomization.
	YAMLFiles int
	// MarkedFiles counts the YAML files that parse and hold markers.
	MarkedFiles int
	// Markers counts the markers in MarkedFiles; the four fields after it
	// split it by form.
	Markers       int
	ImageMarkers  int
	TagMarkers    int
	NameMarkers   int
	DigestMarkers int
	// Changes counts the markers whose value differs from what the
	// policies select from Repositories: every one but the name markers
	// that already hold the right repository.
	Changes int
	// Policies counts the image policies in Config; markers use every one
	// when there are at least as many markers as policies.
	Policies int
	// InvalidFiles counts the YAML files with markers that do not parse.
	InvalidFiles int
	// TokenFiles counts the files holding the text "$imagepolicy" in
	// double quotes, which is what grep -rl '"$imagepolicy"' lists:
	// MarkedFiles, InvalidFiles and some READMEs that show a marker.
	TokenFiles int
	// Bytes is the size of all files together.
	Bytes int64
}

// Repository is one image repository the registry must serve.
type Repository struct {
	// Path is the repository below the registry host, such as fleet/app-007.
	Path string
	// Tags are the tags to publish, oldest first.
	Tags []string
	// Latest is the tag the repository's policy selects from Tags.
	Latest string
	// Digest tells whether the policy pins digests (digest: always).
	Digest bool
}

// policyInfo is one image policy of the tree.
type policyInfo struct {
	ns, name string
	Repository
	semver string
	older  []string // tags in range older than Latest
}

// ref returns "ns:name".
func (p *policyInfo) ref() string { return p.ns + ":" + p.name }

// teams is how many namespaces the policies spread over.
const teams = 20

// policies returns the n policies of every tree. They depend only on n, so
// trees of different sizes share a registry.
func policies(n int) []policyInfo {
	out := make([]policyInfo, n)
	for i := range out {
		p := &out[i]
		p.ns = fmt.Sprintf("team-%02d", i%teams)
		p.name = fmt.Sprintf("app-%03d", i)
		p.Path = "fleet/" + p.name
		p.Digest = i%10 == 0
		p.semver = ">=1.0.0"
		if i%5 == 4 {
			p.semver = ">=1.0.0 <2"
		}
		minors := 3 + i%3
		p.Tags = append(p.Tags, "0.9.0", "0.9.1")
		for m := range minors {
			for patch := range 5 {
				v := fmt.Sprintf("1.%d.%d", m, patch)
				p.Tags = append(p.Tags, v)
				if m < minors-1 {
					p.older = append(p.older, v)
				}
			}
		}
		p.Latest = fmt.Sprintf("1.%d.4", minors-1)
		sum := sha256.Sum256([]byte(p.Path))
		p.Tags = append(p.Tags, "2.0.0-rc.1", "main-"+hex.EncodeToString(sum[:4])[:7], "sha256-"+hex.EncodeToString(sum[:])+".sig", "latest")
	}
	return out
}

// Repositories lists the repositories and tags the registry at
// opts.RegistryHost must serve for a tree made with opts, one per policy.
func Repositories(opts Options) []Repository {
	opts = opts.withDefaults()
	pols := policies(opts.Policies)
	out := make([]Repository, len(pols))
	for i := range pols {
		out[i] = pols[i].Repository
		out[i].Tags = slices.Clone(out[i].Tags)
	}
	return out
}

// Config returns the imagebump.yaml for a tree made with opts: the registry
// host (plain HTTP when it is on loopback) and one semver policy per
// repository, every tenth pinning digests.
func Config(opts Options) []byte {
	opts = opts.withDefaults()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated by treegen for a tree of %d files: %d image policies on %s.\n", opts.Files, opts.Policies, opts.RegistryHost)
	if loopback(opts.RegistryHost) {
		fmt.Fprintf(&b, "registries:\n  - host: %q\n    insecure: true\n", opts.RegistryHost)
	}
	b.WriteString("images:\n")
	for _, p := range policies(opts.Policies) {
		fmt.Fprintf(&b, "  - name: %s\n    repository: %q\n    policy: {semver: %q}\n", p.ref(), opts.RegistryHost+"/"+p.Path, p.semver)
		if p.Digest {
			b.WriteString("    digest: always\n")
		}
	}
	return b.Bytes()
}

// loopback reports whether host[:port] names this machine.
func loopback(host string) bool {
	h := host
	if i := strings.LastIndex(h, ":"); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "[::1]"
}

// Generate writes a tree made with opts into dir, which must be empty or
// absent, and describes it. It writes one file at a time and holds none of
// them afterwards.
func Generate(dir string, opts Options) (Stats, error) {
	opts = opts.withDefaults()
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return Stats{}, fmt.Errorf("generating a tree in %s: the folder is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Stats{}, fmt.Errorf("generating a tree: %w", err)
	}
	g := newGen(opts)
	specs := g.plan()
	made := map[string]bool{}
	for i := range specs {
		s := &specs[i]
		data := g.render(s)
		path := filepath.Join(dir, filepath.FromSlash(s.path))
		if d := filepath.Dir(path); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return Stats{}, fmt.Errorf("generating a tree: %w", err)
			}
			made[d] = true
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return Stats{}, fmt.Errorf("generating a tree: %w", err)
		}
		g.st.Files++
		g.st.Bytes += int64(len(data))
		if s.kind.yaml() {
			g.st.YAMLFiles++
		}
		if bytes.Contains(data, []byte(`"$imagepolicy"`)) {
			g.st.TokenFiles++
		}
	}
	return g.st, nil
}

// kind is what a file is.
type kind int

const (
	kDeployment kind = iota // markable kinds first
	kCronJob
	kKustomization
	kValues
	kCompose
	kRootList
	kService // YAML that never carries markers
	kConfigMap
	kHPA
	kPDB
	kChart
	kTemplate
	kWorkflow
	kRules
	kReadme // not YAML
	kText
	kJSON
)

// markable reports whether files of kind k may carry markers.
func (k kind) markable() bool { return k <= kRootList }

// yaml reports whether imagebump reads files of kind k.
func (k kind) yaml() bool { return k < kReadme }

// spec is one file of the tree, planned before any is written.
type spec struct {
	path    string
	kind    kind
	app     string
	team    string
	env     string
	marked  bool
	invalid bool
}

// gen holds the state of one Generate call.
type gen struct {
	opts Options
	rng  *rand.Rand
	pols []policyInfo
	next int // round robin over pols for markers
	// random makes policy pick at random instead, for the broken files,
	// so that the round robin gives every policy a marker in a file that
	// parses.
	random bool
	st     Stats // totals so far
	cur    Stats // marker counts of the file being rendered
}

func newGen(opts Options) *gen {
	return &gen{
		opts: opts,
		rng:  rand.New(rand.NewPCG(uint64(opts.Seed), 0x696d616765627570)),
		pols: policies(opts.Policies),
		st:   Stats{Policies: opts.Policies},
	}
}

var envs = []string{"dev", "staging", "qa", "prod-eu", "prod-us"}

// plan lays out the tree's files, then picks which carry markers and which
// are broken.
func (g *gen) plan() []spec {
	var specs []spec
	add := func(s spec) {
		if len(specs) < g.opts.Files {
			specs = append(specs, s)
		}
	}
	for unit := 0; len(specs) < g.opts.Files; unit++ {
		team := fmt.Sprintf("team-%02d", g.rng.IntN(teams))
		env := envs[g.rng.IntN(len(envs))]
		app := fmt.Sprintf("svc-%04d", unit)
		s := spec{app: app, team: team, env: env}
		at := func(path string, k kind) {
			s := s
			s.path, s.kind = path, k
			add(s)
		}
		switch r := g.rng.IntN(100); {
		case r < 55:
			d := fmt.Sprintf("clusters/%s/%s/%s/", env, team, app)
			at(d+"deployment.yaml", kDeployment)
			at(d+"service.yaml", kService)
			if g.rng.IntN(10) == 0 {
				at(d+"Kustomization", kKustomization)
			} else {
				at(d+"kustomization.yaml", kKustomization)
			}
			if g.chance(70) {
				at(d+"configmap.yaml", kConfigMap)
			}
			if g.chance(25) {
				at(d+"cronjob.yaml", kCronJob)
			}
			if g.chance(30) {
				at(d+"hpa.yml", kHPA)
			}
			if g.chance(20) {
				at(d+"pdb.yaml", kPDB)
			}
			if g.chance(10) {
				at(d+"README.md", kReadme)
			}
		case r < 70:
			d := "charts/" + app + "/"
			at(d+"Chart.yaml", kChart)
			at(d+"values.yaml", kValues)
			if g.chance(50) {
				at(d+"values-"+env+".yaml", kValues)
			}
			at(d+"templates/deployment.yaml", kTemplate)
			at(d+"templates/service.yaml", kTemplate)
			at(d+"templates/_helpers.tpl", kText)
			at(d+"README.md", kReadme)
		case r < 80:
			d := fmt.Sprintf("compose/%s/%s/", team, app)
			at(d+"docker-compose.yml", kCompose)
			if g.chance(30) {
				at(d+"compose.override.yaml", kCompose)
			}
			at(d+"env.example.txt", kText)
			if g.chance(30) {
				at(d+"README.md", kReadme)
			}
		case r < 90:
			d := fmt.Sprintf("ci/%s/%s/", team, app)
			at(d+"images.yaml", kRootList)
			at(d+"pipeline.yml", kWorkflow)
			if g.chance(50) {
				at(d+"NOTES.txt", kText)
			}
		case r < 95:
			d := fmt.Sprintf("observability/%s/", team)
			at(d+"dashboards/"+app+".json", kJSON)
			at(d+"rules/"+app+".yaml", kRules)
		default:
			d := fmt.Sprintf("docs/%s/", team)
			at(d+app+".md", kReadme)
			at(d+app+"-runbook.txt", kText)
		}
	}

	var yaml, markable []int
	for i, s := range specs {
		if s.kind.yaml() {
			yaml = append(yaml, i)
		}
		if s.kind.markable() {
			markable = append(markable, i)
		}
	}
	marked := int(math.Round(g.opts.MarkedFraction * float64(len(yaml))))
	marked = min(marked, len(markable))
	invalid := min(g.opts.InvalidFiles, len(markable)-marked)
	g.rng.Shuffle(len(markable), func(i, j int) { markable[i], markable[j] = markable[j], markable[i] })
	for n, i := range markable[:marked+invalid] {
		specs[i].marked = n < marked
		specs[i].invalid = n >= marked
	}
	return specs
}

// chance is true percent times in a hundred.
func (g *gen) chance(percent int) bool { return g.rng.IntN(100) < percent }

// pick returns one of choices.
func pick[T any](g *gen, choices ...T) T { return choices[g.rng.IntN(len(choices))] }

// render returns the bytes of one planned file and counts its markers.
func (g *gen) render(s *spec) []byte {
	g.cur = Stats{}
	g.random = s.invalid
	lo := layout{unit: 2, indentSeq: g.chance(50)}
	if g.chance(10) {
		lo.unit = 4
	}
	var docs []node
	var b bytes.Buffer
	mark := s.marked || s.invalid
	switch s.kind {
	case kDeployment:
		docs = g.deployment(s, mark)
	case kCronJob:
		docs = []node{g.cronJob(s, mark)}
	case kKustomization:
		docs = []node{g.kustomization(s, mark)}
	case kValues:
		docs = []node{g.values(s, mark)}
	case kCompose:
		docs = []node{g.compose(s, mark)}
	case kRootList:
		docs = []node{g.rootList(s, mark)}
	case kService:
		docs = []node{g.service(s)}
	case kConfigMap:
		docs = []node{g.configMap(s)}
	case kHPA:
		docs = []node{g.hpa(s)}
	case kPDB:
		docs = []node{g.pdb(s)}
	case kChart:
		docs = []node{g.chart(s)}
	case kWorkflow:
		docs = []node{g.workflow(s)}
	case kRules:
		docs = []node{g.rules(s)}
	case kTemplate:
		g.template(&b, s)
	case kReadme:
		g.readme(&b, s)
	case kText:
		g.text(&b, s)
	case kJSON:
		g.json(&b, s)
	}
	if len(docs) > 0 {
		if g.chance(10) {
			b.WriteString("---\n")
		}
		p := &printer{b: &b, lo: lo}
		for i, d := range docs {
			if i > 0 {
				b.WriteString("---\n")
			}
			p.document(d)
		}
	}
	data := b.Bytes()
	if s.invalid {
		data = g.corrupt(data)
	}
	if s.kind.yaml() {
		if g.chance(4) {
			data = bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
		}
		if g.chance(1) {
			data = append([]byte("\uFEFF"), data...)
		}
	}
	if s.marked {
		c := g.cur
		g.st.MarkedFiles++
		g.st.Markers += c.Markers
		g.st.ImageMarkers += c.ImageMarkers
		g.st.TagMarkers += c.TagMarkers
		g.st.NameMarkers += c.NameMarkers
		g.st.DigestMarkers += c.DigestMarkers
		g.st.Changes += c.Changes
	}
	if s.invalid {
		g.st.InvalidFiles++
	}
	return data
}

// corrupt breaks a YAML file in one of the ways hand edits do, after its
// second line, so the markers stay but the file no longer parses.
func (g *gen) corrupt(data []byte) []byte {
	bad := pick(g,
		"\tmisindented: a tab where spaces belong\n",
		"annotations: [unclosed, flow\n",
		"broken: \"an unterminated string\n  : a key without a name\n",
		"  - stray: item\nlost: value\n  : x\n",
	)
	lines := bytes.SplitAfter(data, []byte("\n"))
	at := min(2, len(lines))
	out := make([]byte, 0, len(data)+len(bad))
	for _, l := range lines[:at] {
		out = append(out, l...)
	}
	out = append(out, bad...)
	for _, l := range lines[at:] {
		out = append(out, l...)
	}
	return out
}

// policy returns the next policy for a marker, round robin, so that every
// policy gets markers.
func (g *gen) policy() *policyInfo {
	if g.random {
		return &g.pols[g.rng.IntN(len(g.pols))]
	}
	p := &g.pols[g.next%len(g.pols)]
	g.next++
	return p
}

// trail returns the marker comment for a policy reference, with one or two
// spaces before the '#'.
func (g *gen) trail(ref string) string {
	return pick(g, " ", "  ") + `# {"$imagepolicy": "` + ref + `"}`
}

// quoted returns s as a scalar in a random quote style.
func (g *gen) quoted(s scalar) scalar {
	switch r := g.rng.IntN(10); {
	case r < 2:
		s.quote = '"'
	case r < 3:
		s.quote = '\''
	}
	return s
}

// old returns an older tag of p, one a plan moves from.
func (g *gen) old(p *policyInfo) string { return p.older[g.rng.IntN(len(p.older))] }

// oldDigest returns a digest no registry serves, for :digest markers and
// pinned references to move from.
func (g *gen) oldDigest(p *policyInfo) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("old %s %d", p.Path, g.rng.IntN(1000))))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// imageRef returns the full reference of p's repository.
func (g *gen) repo(p *policyInfo) string { return g.opts.RegistryHost + "/" + p.Path }

// fullMarked returns an image: value with a full-reference marker.
func (g *gen) fullMarked() scalar {
	p := g.policy()
	v := g.repo(p) + ":" + g.old(p)
	if p.Digest && g.chance(50) {
		v += "@" + g.oldDigest(p)
	}
	g.cur.Markers++
	g.cur.ImageMarkers++
	g.cur.Changes++
	s := g.quoted(plain(v))
	s.trail = g.trail(p.ref())
	return s
}

// split returns the name, tag and (for digest policies) digest scalars with
// their markers, for files that keep an image's parts apart.
func (g *gen) split() (name, tag scalar, digest *scalar) {
	p := g.policy()
	n := g.repo(p)
	if g.chance(50) {
		n = "old-registry.example.com/" + p.Path // moving registries
		g.cur.Changes++
	}
	name = plain(n)
	name.trail = g.trail(p.ref() + ":name")
	tag = g.quoted(plain(g.old(p)))
	tag.trail = g.trail(p.ref() + ":tag")
	g.cur.Markers += 2
	g.cur.NameMarkers++
	g.cur.TagMarkers++
	g.cur.Changes++
	if p.Digest {
		d := plain(g.oldDigest(p))
		d.trail = g.trail(p.ref() + ":digest")
		digest = &d
		g.cur.Markers++
		g.cur.DigestMarkers++
		g.cur.Changes++
	}
	return name, tag, digest
}

// public are images no policy owns, for the files without markers.
var public = []struct{ name, tag string }{
	{"docker.io/library/nginx", "1.25.3"},
	{"docker.io/library/redis", "7.2.4-alpine"},
	{"docker.io/library/postgres", "16.2"},
	{"ghcr.io/example/otel-collector", "0.96.0"},
	{"quay.io/prometheus/node-exporter", "v1.7.0"},
	{"registry.k8s.io/pause", "3.9"},
	{"docker.io/envoyproxy/envoy", "v1.29.1"},
	{"gcr.io/distroless/static", "nonroot"},
}

// publicImage returns an unmarked image reference.
func (g *gen) publicImage() string {
	im := public[g.rng.IntN(len(public))]
	return im.name + ":" + im.tag
}

// image returns a container's image: scalar, marked or not.
func (g *gen) image(mark bool) scalar {
	if mark {
		return g.fullMarked()
	}
	return g.quoted(plain(g.publicImage()))
}
