package cycle

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/imagebump/imagebump/config"
	"github.com/imagebump/imagebump/flux"
	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/setters"
)

// Registry is what a cycle needs from a registry client; *registry.Client
// implements it, and tests may fake it.
type Registry interface {
	Scan(ctx context.Context, repositories []string, concurrency int) []registry.Result
	Digest(ctx context.Context, repository, tag, platform string) (string, error)
}

var (
	_ Registry = (*registry.Client)(nil)
	_ Registry = (*registry.Cycle)(nil)
)

// cycler is a registry client that can start a cycle: a view that
// remembers, for one cycle, which hosts stopped answering, so that a host
// that is down costs the cycle one timeout rather than one per repository.
type cycler interface {
	Cycle() *registry.Cycle
}

var _ cycler = (*registry.Client)(nil)

// perCycle returns the view of reg for one cycle, or reg itself when it
// has no such view (a fake, or a view already).
func perCycle(reg Registry) Registry {
	if c, ok := reg.(cycler); ok {
		return c.Cycle()
	}
	return reg
}

// Options configure one scan of a checkout.
type Options struct {
	// Config holds the image policies; required.
	Config *config.Config
	// Registry answers tag and digest queries; required.
	Registry Registry
	// Root is the checkout to scan.
	Root string
	// Paths limits the scan to these paths below Root; empty means all.
	Paths []string
	// Policies says which policies this run applies (a target's globs);
	// nil applies every policy.
	Policies func(name string) bool
	// Write applies the edits; false computes them only.
	Write bool
	// OnEdit, when set, receives each changed file's bytes before and after.
	OnEdit func(file string, before, after []byte)
	// Concurrency is the number of repositories scanned at once; 0 means 8.
	Concurrency int
	// Logger receives progress; nil discards.
	Logger *slog.Logger
	// Now is the time holds and minimum ages are checked against; nil
	// means time.Now.
	Now func() time.Time
	// Gates checks signatures and minimum ages; keep one for as long as the
	// config, so verified digests stay cached between cycles. Nil means a
	// new one for this Run.
	Gates *Gates
	// Selection, when set, is a previous run's policy results: the
	// registries are not asked again. Write-back uses it to redo the same
	// edits on a newer head after a push race.
	Selection []PolicyResult
	// Index, when set, is the marker index of Root (see setters.Index):
	// Run brings it up to date, learns from it which policies the markers
	// name, and reads only the files whose markers move. Nil reads every
	// file.
	Index *setters.Index
	// Warned holds the tag warnings (invalid tags, say) a caller's last
	// cycle logged, as WarnedBy gives them: Run logs those again at debug
	// only, so that serve does not repeat one every cycle. Nil logs every
	// warning at warn.
	Warned map[string]bool
	// prefetch, when set, holds results selected while the working copy
	// was fetched (see prefetch.go); Run asks only for what it lacks.
	prefetch *prefetch
	// workingCopy says Root is a target's working copy, which gitwriter
	// makes durable before its Git index records the files written: the
	// edit need not (setters.Options.NoSync).
	workingCopy bool
}

// PolicyResult is what one image policy selected, or why it could not.
type PolicyResult struct {
	// Name is the policy's name, NAMESPACE:NAME.
	Name string
	// Repository is the image repository the policy watches.
	Repository string
	// Selection explains the pick: tags seen, excluded, filtered, the winner.
	Selection policy.Result
	// Digest is the latest tag's digest, when the policy pins digests.
	Digest string
	// Err is why the policy has no result (registry failure, no tag
	// matches); its markers are left as they are.
	Err error
	// Held is the policy's hold when it is active: the pick is reported
	// but the markers are left as they are.
	Held *config.Hold
	// HeldBack are the tags, better by the rule than the pick, that a gate
	// (minAge, verify) held back, best first.
	HeldBack []HeldBack

	// pickedFrom is what Selection was picked from, when no gate took
	// part: the next cycle of the target keeps Selection when it lists
	// the same tags for the same policy.
	pickedFrom pickKey
}

// pickKey is what a policy's pick depends on, when no gate takes part:
// the compiled policy (the same object while the config is not reloaded)
// and the tags listed, by a hash of them.
type pickKey struct {
	policy *policy.Policy
	tags   uint64
}

// tagsSeed seeds the hashes of tag lists; they are compared within one
// process only.
var tagsSeed = maphash.MakeSeed()

// tagsSum hashes a tag list, order and lengths included.
func tagsSum(tags []string) uint64 {
	var h maphash.Hash
	h.SetSeed(tagsSeed)
	var n [8]byte
	for _, t := range tags {
		binary.LittleEndian.PutUint64(n[:], uint64(len(t)))
		h.Write(n[:])
		h.WriteString(t)
	}
	return h.Sum64()
}

// previousPicks returns prev's policy results by name, pointing into its
// report, for their picks and for which policies it asked the registries
// for; nil when there is no previous cycle or it asked for none.
func previousPicks(prev *TargetResult) map[string]*PolicyResult {
	if prev == nil || prev.Report == nil || len(prev.Report.Policies) == 0 {
		return nil
	}
	picks := make(map[string]*PolicyResult, len(prev.Report.Policies))
	for i := range prev.Report.Policies {
		p := &prev.Report.Policies[i]
		picks[p.Name] = p
	}
	return picks
}

// Latest is the tag the policy picked, or "".
func (p PolicyResult) Latest() string {
	if p.Err != nil {
		return ""
	}
	return p.Selection.Latest
}

// ErrNoMatch is the PolicyResult error when a policy's filters and range
// leave no tag.
var ErrNoMatch = errors.New("no tag matches")

// Report is the outcome of a scan.
type Report struct {
	// Policies holds one result per policy that was asked for (applied by
	// the target and named by a marker), in config order.
	Policies []PolicyResult
	// Unreferenced names the policies the target applies but no marker
	// names; their registries were not asked.
	Unreferenced []string
	// Changes are the edits, made or (dry run) to be made.
	Changes []setters.Change
	// Problems are markers and files that could not be handled.
	Problems []setters.Problem
	// Markers are every marker found. None at all usually means git.paths
	// misses the manifests, or markers are still to be written.
	Markers []setters.Marker
	// FilesScanned counts the YAML files looked at: read, or served from
	// the marker index.
	FilesScanned int
	// FilesRead counts the YAML files whose bytes were read.
	FilesRead int
	// FilesCached counts the YAML files served from the marker index
	// without reading them.
	FilesCached int
	// FilesChanged lists the files whose bytes changed (or would).
	FilesChanged []string
	// Stale lists the files of a Git working copy that did not hold what
	// the commit holds (someone else wrote them); they were left alone.
	Stale []string
}

// Failed reports whether any policy or marker failed; the exit code of
// plan, apply and run is 1 then, though the rest was still done.
func (r *Report) Failed() bool {
	return len(r.Problems) > 0 || r.FailedPolicies() > 0
}

// FailedPolicies counts the policies that have no result.
func (r *Report) FailedPolicies() int {
	n := 0
	for _, p := range r.Policies {
		if p.Err != nil {
			n++
		}
	}
	return n
}

// Unwritten returns the problems of files that could not be written (a
// full disk, a folder not this user's): their bumps are pending, not a
// fault of the files'.
func (r *Report) Unwritten() []setters.Problem {
	var out []setters.Problem
	for _, p := range r.Problems {
		var we *setters.WriteError
		if errors.As(p.Err, &we) {
			out = append(out, p)
		}
	}
	return out
}

// Run selects the latest image of every applied policy, then finds the
// markers under Root and computes (and with Write, makes) the edits. Its
// error is reserved for what stops the whole scan (a bad Root, a cancelled
// ctx); a failing registry or file is reported in the Report and the rest
// goes on.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Config == nil || (opts.Registry == nil && opts.Selection == nil) {
		return nil, errors.New("cycle: Config and Registry (or Selection) are required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	limit := opts.Config.FileSizeLimit()
	results := opts.Selection
	var unreferenced []string
	if results == nil {
		applied := appliedImages(opts.Config, opts.Policies)
		// Only the policies that some marker names are asked for: the
		// markers are local and cheap, a registry's rate limit is not. The
		// ifNotPresent digest mode also needs the markers' current values,
		// which takes a full parse instead of a line scan.
		var current map[string]pinned
		var refs setters.References
		pinning := needsCurrent(applied)
		// Without a prefetch, the tag listings start as the scan finds
		// the policies, rather than after it.
		var list lister = opts.Registry
		var onRef func(string)
		if opts.prefetch == nil && !pinning {
			ahead := startListAhead(ctx, opts.Registry, applied, opts.Concurrency)
			defer ahead.stop()
			list, onRef = ahead, ahead.add
		}
		if ix := opts.Index; ix != nil {
			if err := ix.Scan(ctx, setters.Options{Root: opts.Root, Paths: opts.Paths, MaxFileSize: limit, Write: opts.Write, OnReference: onRef, Logger: logger}); err != nil {
				return nil, err
			}
			if pinning {
				// As below: the parsed markers, not the comments.
				if err := ix.ParseMarkers(ctx, setters.Options{Root: opts.Root, Paths: opts.Paths, MaxFileSize: limit, Logger: logger}); err != nil {
					return nil, err
				}
				markers := ix.Markers()
				current = pinnedValues(markers)
				refs = setters.References{}
				for _, m := range markers {
					refs[m.Policy]++
				}
			} else {
				refs = ix.References()
			}
		} else if pinning {
			res, err := setters.Apply(ctx, setters.Options{
				Root: opts.Root, Paths: opts.Paths, MaxFileSize: limit, Known: func(string) bool { return true }, Logger: logger,
			})
			if err != nil {
				return nil, err
			}
			current = pinnedValues(res.Markers)
			refs = setters.References{}
			for _, m := range res.Markers {
				refs[m.Policy]++
			}
		} else {
			var err error
			if refs, err = setters.Referenced(ctx, setters.Options{Root: opts.Root, Paths: opts.Paths, MaxFileSize: limit, OnReference: onRef, Logger: logger}); err != nil {
				return nil, err
			}
		}
		var images []*config.Image
		for _, im := range applied {
			if refs[im.Name] > 0 {
				images = append(images, im)
			} else {
				unreferenced = append(unreferenced, im.Name)
			}
		}
		if len(unreferenced) > 0 {
			logger.Debug("policies not asked for: no marker names them", "policies", unreferenced)
		}
		gates := gatesFor(opts.Gates, images, opts.Now, logger)
		if opts.prefetch != nil && current == nil {
			results = opts.prefetch.selectWith(ctx, opts.Registry, gates, images, opts.Concurrency, logger)
		} else {
			results = selectListed(ctx, list, opts.Registry, gates, images, current, nil, opts.Concurrency, logger)
		}
		logTagWarnings(results, opts.Warned, logger)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	selected := make(map[string]setters.Image, len(results))
	for i := range results {
		r := &results[i]
		if im, ok := opts.Config.Image(r.Name); ok && im.Hold.Active(now) {
			// A held policy's markers stay put: it is known to the
			// setters, but has no image to write.
			r.Held = im.Hold
			continue
		}
		r.Held = nil
		if r.Err == nil {
			selected[r.Name] = setters.Image{Repository: r.Repository, Tag: r.Selection.Latest, Digest: r.Digest}
		}
	}
	res, err := setters.Apply(ctx, setters.Options{
		Root:        opts.Root,
		Paths:       opts.Paths,
		MaxFileSize: limit,
		Images:      selected,
		Known:       opts.Config.Has,
		Write:       opts.Write,
		NoSync:      opts.workingCopy,
		OnEdit:      opts.OnEdit,
		Logger:      logger,
		Index:       opts.Index,
	})
	if err != nil {
		return nil, err
	}
	hintUnknown(opts.Config, res.Problems)
	if opts.Index != nil {
		logger.Debug("scanned the markers", "files", res.FilesScanned, "read", res.FilesRead, "from_index", res.FilesCached)
	}
	return &Report{
		Policies:     results,
		Unreferenced: unreferenced,
		Changes:      res.Changes,
		Problems:     res.Problems,
		Markers:      res.Markers,
		FilesScanned: res.FilesScanned,
		FilesRead:    res.FilesRead,
		FilesCached:  res.FilesCached,
		FilesChanged: res.FilesChanged,
		Stale:        res.Stale,
	}, nil
}

// appliedImages returns the config's images that selected admits.
func appliedImages(cfg *config.Config, selected func(string) bool) []*config.Image {
	var out []*config.Image
	for i := range cfg.Images {
		im := &cfg.Images[i]
		if selected == nil || selected(im.Name) {
			out = append(out, im)
		}
	}
	return out
}

func needsCurrent(images []*config.Image) bool {
	for _, im := range images {
		if im.Digest == policy.DigestIfNotPresent {
			return true
		}
	}
	return false
}

// pinned is the tag and digest a policy's markers hold now.
type pinned struct{ tag, digest string }

// pinnedValues reads, per policy, the tag and digest its markers hold. When
// markers disagree the policy gets no entry, so its digest is resolved again.
func pinnedValues(markers []setters.Marker) map[string]pinned {
	out := map[string]pinned{}
	conflict := map[string]bool{}
	set := func(policy string, p pinned) {
		old, ok := out[policy]
		if !ok {
			out[policy] = p
			return
		}
		if p.tag != "" && old.tag != "" && p.tag != old.tag || p.digest != "" && old.digest != "" && p.digest != old.digest {
			conflict[policy] = true
		}
		if old.tag == "" {
			old.tag = p.tag
		}
		if old.digest == "" {
			old.digest = p.digest
		}
		out[policy] = old
	}
	for _, m := range markers {
		switch m.Field {
		case setters.FieldImage:
			set(m.Policy, splitReference(m.Value))
		case setters.FieldTag:
			set(m.Policy, pinned{tag: m.Value})
		case setters.FieldDigest:
			set(m.Policy, pinned{digest: m.Value})
		}
	}
	for p := range conflict {
		delete(out, p)
	}
	return out
}

// splitReference takes the tag and digest out of name:tag@sha256:... .
func splitReference(ref string) pinned {
	var p pinned
	if i := strings.Index(ref, "@"); i >= 0 {
		p.digest = ref[i+1:]
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i >= 0 && !strings.Contains(ref[i:], "/") {
		p.tag = ref[i+1:]
	}
	return p
}

// defaultConcurrency is how many repositories a selection lists at once
// when Options.Concurrency is not set; each host's own limit applies too.
const defaultConcurrency = 8

// gatesFor returns gates, or new Gates when it is nil and some image needs
// them (minAge or verify), or nil.
func gatesFor(gates *Gates, images []*config.Image, now func() time.Time, logger *slog.Logger) *Gates {
	if gates == nil && slices.ContainsFunc(images, needsGates) {
		gates = NewGates(now, logger)
	}
	return gates
}

// selectImages lists the tags of each image's repository (each repository once),
// picks the latest tag by each policy, and resolves digests where the policy
// asks. current holds what the files pin now, for the ifNotPresent mode. One
// failing repository fails only its own policies. prev holds the target's
// last results by policy name (or is nil): a pick made from the same tags
// by the same policy, with no gate, is kept rather than made again.
func selectImages(ctx context.Context, reg Registry, gates *Gates, images []*config.Image, current map[string]pinned, prev map[string]*PolicyResult, concurrency int, logger *slog.Logger) []PolicyResult {
	return selectListed(ctx, reg, reg, gates, images, current, prev, concurrency, logger)
}

// newTagList is policy.NewTagList; tests count its calls.
var newTagList = policy.NewTagList

// lister lists the tags of repositories, as Registry.Scan does.
type lister interface {
	Scan(ctx context.Context, repositories []string, concurrency int) []registry.Result
}

// selectListed is selectImages with the tag listings taken from list.
func selectListed(ctx context.Context, list lister, reg Registry, gates *Gates, images []*config.Image, current map[string]pinned, prev map[string]*PolicyResult, concurrency int, logger *slog.Logger) []PolicyResult {
	if concurrency <= 0 {
		concurrency = defaultConcurrency
	}
	var repos []string
	seen := map[string]bool{}
	for _, im := range images {
		if !seen[im.Repository] {
			seen[im.Repository] = true
			repos = append(repos, im.Repository)
		}
	}
	scans := map[string]registry.Result{}
	sums := map[string]uint64{} // tagsSum by repository, for the next cycle's prev
	for _, r := range list.Scan(ctx, repos, concurrency) {
		scans[r.Repository] = r
		if r.Err == nil {
			sums[r.Repository] = tagsSum(r.Tags)
		}
	}
	// The policies of one repository share what they read the same way
	// (which tags are valid, their versions), read once for all of them.
	// A list is dropped after its repository's last policy: kept, the
	// lists of many large repositories would add up.
	// A pick made from the same tags by the same policy, with no gate, is
	// kept, and reads no list.
	keys := make([]pickKey, len(images))
	same := make([]bool, len(images))
	shared := map[string]*policy.TagList{}
	left := map[string]int{} // policies still to pick, by repository
	for i, im := range images {
		keys[i] = pickKey{policy: im.Policy(), tags: sums[im.Repository]}
		last, ok := prev[im.Name]
		if same[i] = ok && !needsGates(im) && last.pickedFrom == keys[i] && keys[i].policy != nil && last.Err == nil; same[i] {
			continue
		}
		left[im.Repository]++
		if left[im.Repository] == 2 {
			shared[im.Repository] = newTagList(scans[im.Repository].Tags)
		}
	}

	results := make([]PolicyResult, len(images))
	var wg sync.WaitGroup
	sem := make(chan struct{}, concurrency)
	for i, im := range images {
		results[i] = PolicyResult{Name: im.Name, Repository: im.Repository}
		list := shared[im.Repository]
		if !same[i] {
			if left[im.Repository]--; left[im.Repository] == 0 {
				delete(shared, im.Repository)
			}
		}
		scan, ok := scans[im.Repository]
		switch {
		case !ok:
			results[i].Err = fmt.Errorf("policy %s: repository %s was not scanned", im.Name, im.Repository)
			continue
		case scan.Err != nil:
			results[i].Err = fmt.Errorf("policy %s: %w", im.Name, scan.Err)
			continue
		}
		gated := needsGates(im)
		var sel policy.Result
		var err error
		switch {
		case same[i]:
			sel = prev[im.Name].Selection
		case list != nil:
			sel, err = im.Policy().PickList(ctx, list)
		default:
			sel, err = im.Policy().Pick(ctx, scan.Tags)
		}
		if !gated {
			results[i].pickedFrom = keys[i]
		}
		if err != nil {
			results[i].Err = fmt.Errorf("policy %s: selecting among %d tags of %s: %w", im.Name, len(scan.Tags), im.Repository, err)
			continue
		}
		results[i].Selection = sel
		if sel.Latest == "" {
			detail := strings.TrimPrefix(sel.Summary(), ErrNoMatch.Error()+": ")
			results[i].Err = fmt.Errorf("policy %s: %w in %s: %s (see why with: imagebump tags %s, with the same -c)", im.Name, ErrNoMatch, im.Repository, detail, im.Name)
			continue
		}
		known := current[im.Name]
		if !gated && !im.Digest.NeedsLookup(sel.Latest, known.tag, known.digest) {
			if im.Digest == policy.DigestIfNotPresent {
				results[i].Digest = known.digest
			}
			continue
		}
		wg.Add(1)
		go func(r *PolicyResult, im *config.Image, tags []string) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				r.Err = fmt.Errorf("policy %s: %w", im.Name, ctx.Err())
				return
			}
			defer func() { <-sem }()
			if gated {
				// Signatures and minimum ages hold back tags the rule
				// would pick; the best tag that passes is the pick.
				picked, held, err := gates.Pick(ctx, reg, im, r.Selection, tags)
				r.HeldBack = held
				if err != nil {
					r.Err = err
					return
				}
				r.Selection = picked
				if picked.Latest == "" {
					r.Err = fmt.Errorf("policy %s: %w in %s: %s (%s) (see why with: imagebump tags %s, with the same -c)", im.Name, ErrNoMatch, im.Repository, HeldBackSummary(len(held)), DescribeHeld(held), im.Name)
					return
				}
				if !im.Digest.NeedsLookup(picked.Latest, known.tag, known.digest) {
					if im.Digest != policy.DigestIfNotPresent {
						return
					}
					r.Digest, r.Err = pinnedUnderGates(ctx, reg, gates, im, picked.Latest, known.digest, logger)
					return
				}
			}
			d, err := reg.Digest(ctx, im.Repository, r.Selection.Latest, im.Platform)
			if err != nil {
				r.Err = fmt.Errorf("policy %s: %w", im.Name, err)
				return
			}
			r.Digest = d
		}(&results[i], im, scan.Tags)
	}
	wg.Wait()
	for _, r := range results {
		if r.Err == nil {
			logger.Debug("policy selected", "policy", r.Name, "latest", r.Selection.Latest, "digest", r.Digest)
		}
	}
	return results
}

// pinnedUnderGates returns the digest to pin beside the pick's tag, with
// digest ifNotPresent under gates, where the markers pin one already: the
// markers deploy that digest, while the gates checked the tag's digest of
// today. The pinned one stays when it is today's (for a platform, today's
// image of that platform, whose index the gates checked) or passes the
// gates itself; a build pinned by hand that fails them (unsigned, too
// young), or that the registry no longer has, gives way to today's. A
// platform's image is seldom signed apart from its index, so under verify
// a pinned platform digest other than today's gives way too.
func pinnedUnderGates(ctx context.Context, reg Registry, gates *Gates, im *config.Image, tag, pinned string, logger *slog.Logger) (string, error) {
	today, err := reg.Digest(ctx, im.Repository, tag, im.Platform)
	if err != nil {
		return "", fmt.Errorf("policy %s: %w", im.Name, err)
	}
	if today == pinned {
		return pinned, nil
	}
	greg, _ := reg.(GateRegistry) // gates.Pick refused a registry that is none
	hb, err := gates.CheckDigest(ctx, greg, im, tag, pinned)
	switch {
	case err != nil && registry.KindOf(err) == registry.KindNotFound:
		logger.Info("the digest the markers pin for the pick is gone from the registry; pinning the tag's digest of today", "policy", im.Name, "tag", tag, "digest", pinned)
		return today, nil
	case err != nil:
		return "", err
	case hb != nil:
		logger.Info("the digest the markers pin for the pick does not pass the policy's gates; pinning the tag's digest of today", "policy", im.Name, "tag", tag, "digest", pinned, "gate", string(hb.Gate))
		return today, nil
	}
	return pinned, nil
}

// hintUnknown adds to each marker naming an unknown policy the name it
// most likely meant: the same name in another namespace (a Flux policy
// lives in its object's namespace), or the closest name.
func hintUnknown(cfg *config.Config, problems []setters.Problem) {
	var names []string
	for _, p := range problems {
		var up *setters.UnknownPolicyError
		if !errors.As(p.Err, &up) || up.Hint != "" {
			continue
		}
		if names == nil {
			for _, im := range cfg.Images {
				names = append(names, im.Name)
			}
		}
		up.Hint = flux.SuggestPolicy(up.Policy, names)
	}
}

// DescribeHeld summarizes held-back tags for an error: how many per gate
// ("50 too young", "2 unsigned, 1 too young").
func DescribeHeld(held []HeldBack) string {
	counts := map[Gate]int{}
	var order []Gate
	for _, h := range held {
		if counts[h.Gate] == 0 {
			order = append(order, h.Gate)
		}
		counts[h.Gate]++
	}
	var parts []string
	for _, g := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[g], g))
	}
	return strings.Join(parts, ", ")
}

// logTagWarnings logs the policies' tag warnings: at warn, or at debug
// for those warned holds.
func logTagWarnings(results []PolicyResult, warned map[string]bool, logger *slog.Logger) {
	for _, r := range results {
		for _, w := range r.Selection.Warnings {
			level := slog.LevelWarn
			if warned[r.Name+"\n"+w] {
				level = slog.LevelDebug
			}
			logger.Log(context.Background(), level, w, "policy", r.Name, "repository", r.Repository)
		}
	}
}

// WarnedBy returns the tag warnings rep's policies had, for Options.Warned
// of the next cycle; nil for a nil rep.
func WarnedBy(rep *Report) map[string]bool {
	if rep == nil {
		return nil
	}
	warned := map[string]bool{}
	for _, p := range rep.Policies {
		for _, w := range p.Selection.Warnings {
			warned[p.Name+"\n"+w] = true
		}
	}
	return warned
}
