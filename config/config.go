package config

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/imagebump/imagebump/policy"
	"github.com/imagebump/imagebump/verify"
)

// DefaultNamespace is the namespace of an image name written without one:
// "app" and "default:app" name the same image.
const DefaultNamespace = "default"

// DefaultTargetName is the name Targets gives the target described by the
// top-level git, commit, push and schedule keys.
const DefaultTargetName = "default"

// Default commit author, used when commit.author.name or
// commit.author.email is not given.
const (
	DefaultAuthorName  = "imagebump"
	DefaultAuthorEmail = "imagebump@localhost"
)

// Config is a loaded and validated imagebump.yaml. Fields hold the values as
// written, with defaults applied, image names normalized and relative file
// paths resolved against the config file's directory.
type Config struct {
	// Registries holds per-host registry settings. A registry that is not
	// listed is used with default settings and the default Docker keychain.
	Registries []Registry `yaml:"registries"`
	// Images holds the image policies that markers refer to.
	Images []Image `yaml:"images"`
	// Git is the repository of the single top-level target. It is nil when
	// the file has no git key, for commands that need no repository or when
	// TargetList is used.
	Git *Git `yaml:"git"`
	// Commit configures commits of the top-level target.
	Commit *Commit `yaml:"commit"`
	// Push configures where the top-level target's commits go.
	Push *Push `yaml:"push"`
	// Schedule is when `serve` runs the top-level target: a 5-field cron
	// expression, a descriptor (@hourly, @every 10m) or a Go duration (5m).
	Schedule string `yaml:"schedule"`
	// TargetList holds the targets of the targets key. It excludes the
	// top-level Git, Commit, Push and Schedule. Use Targets to get the
	// targets whichever form the file uses.
	TargetList []Target `yaml:"targets"`
	// Flux, when set, reads Flux's image automation objects as more image
	// policies and targets (as --flux does).
	Flux *FluxSource `yaml:"flux"`
	// Webhooks are the registry webhook endpoints of `imagebump serve`:
	// POST /hook/NAME scans at once the images a push event names.
	Webhooks []Webhook `yaml:"webhooks"`
	// MaxFileSize is the largest YAML file with markers that is parsed and
	// edited, as written: bytes, or a number with KiB, MiB or GiB ("4MiB").
	// Empty means setters.DefaultMaxFileSize (2 MiB). See FileSizeLimit.
	MaxFileSize string `yaml:"maxFileSize"`

	// File is the config's file name, as given to Load or Parse.
	File string `yaml:"-"`
	// FromFlux is set on a config made from Flux objects alone, whose
	// errors speak of those objects' fields.
	FromFlux bool `yaml:"-"`

	// images maps a normalized image name to its index in Images.
	images map[string]int
	// keyLines are the lines of the keys written, by key path
	// (registries[0].auth.dockerConfig).
	keyLines map[string]int
}

// FluxSource says where Flux objects are read from.
type FluxSource struct {
	// Paths are files or folders of Flux objects (ImageRepository,
	// ImagePolicy, ImageUpdateAutomation, GitRepository), relative to the
	// config file: when imagebump.yaml sits in the cluster repository,
	// folders of that repository, such as clusters/prod/flux-system.
	Paths []string `yaml:"paths" config:"path"`
	// Secrets is a file mapping the Secrets the objects name to files or
	// environment variables, or a folder holding them as mounted Secrets
	// (NAMESPACE/NAME/KEY); see docs/flux.md.
	Secrets string `yaml:"secrets" config:"path"`
}

// Registry holds the settings of one registry host.
type Registry struct {
	// Host is the registry's host, with an optional port: ghcr.io,
	// localhost:5000. It has no scheme and no path. docker.io and
	// index.docker.io are the same host.
	Host string `yaml:"host"`
	// Auth says where the registry's credentials are. Nil means the default
	// Docker keychain (~/.docker/config.json and its credential helpers).
	Auth *RegistryAuth `yaml:"auth"`
	// Provider says where the credentials come from when Auth is not set:
	// "aws", "gcp" or "azure" ask that cloud with the process's own
	// identity (ECR, Artifact Registry/GCR, ACR); "auto" picks the cloud
	// from the host name, or generic for other hosts; "generic" (the
	// default, and that of hosts not listed) is Auth or the Docker
	// keychain. A provider other than generic excludes Auth. See
	// docs/cloud-registries.md.
	Provider string `yaml:"provider" enum:"generic,auto,aws,gcp,azure"`
	// Insecure allows plain HTTP to the registry.
	Insecure bool `yaml:"insecure"`
	// CAFile is a PEM file of CA certificates to trust for this registry,
	// in addition to the system pool.
	CAFile string `yaml:"caFile" config:"path"`
	// RateLimit limits requests to this registry. Nil means no limit.
	RateLimit *RateLimit `yaml:"rateLimit"`
	// Concurrency is the number of requests in flight at once to this
	// registry. Zero means the registry package's default.
	Concurrency int `yaml:"concurrency"`
	// Timeout bounds each request to this registry; a registry that does
	// not answer within it is held down for the rest of the cycle. Zero
	// means registry.DefaultTimeout (30s).
	Timeout time.Duration `yaml:"timeout"`
	// Retries is how many times a failed request is retried (429, 5xx,
	// timeouts, connection errors). Nil means registry.DefaultMaxRetries
	// (4); 0 turns retries off.
	Retries *int `yaml:"retries"`
	// MaxPages and MaxTags cap one repository's tag listing; past either,
	// that repository fails and the others go on. Zero means
	// registry.DefaultMaxPages (1000) and registry.DefaultMaxTags (500000).
	MaxPages int `yaml:"maxPages"`
	MaxTags  int `yaml:"maxTags"`
	// RepositoryTimeout bounds all the work on one repository (its listing,
	// or one digest, retries and waits included). Zero means
	// registry.DefaultRepositoryTimeout (5m).
	RepositoryTimeout time.Duration `yaml:"repositoryTimeout"`

	// Line is the line of the registry's entry in the config file.
	Line int `yaml:"-"`
}

// RegistryAuth holds the credentials of a registry, as file references.
// At most one method is set: DockerConfig, UsernameFile with PasswordFile,
// or TokenFile.
type RegistryAuth struct {
	// DockerConfig is a Docker config.json file whose auths (and credential
	// helpers) are used.
	DockerConfig string `yaml:"dockerConfig" config:"path"`
	// UsernameFile holds the user name for basic authentication.
	UsernameFile string `yaml:"usernameFile" config:"secret"`
	// PasswordFile holds the password for basic authentication.
	PasswordFile string `yaml:"passwordFile" config:"secret"`
	// TokenFile holds a bearer (identity) token.
	TokenFile string `yaml:"tokenFile" config:"secret"`
}

// RateLimit is a token bucket.
type RateLimit struct {
	// RequestsPerSecond is the sustained rate; it is greater than zero.
	RequestsPerSecond float64 `yaml:"requestsPerSecond"`
	// Burst is the bucket size. Zero means the registry package's default.
	Burst int `yaml:"burst"`
}

// Image is an image policy: a repository and the rule that picks its
// latest tag.
type Image struct {
	// Name is the policy's name in NAMESPACE:NAME form, as markers refer to
	// it. A name written without a namespace is stored as default:NAME.
	Name string `yaml:"name"`
	// Repository is the image repository, without tag or digest:
	// ghcr.io/acme/app, nginx.
	Repository string `yaml:"repository"`
	// Rule is the selection rule, written under the policy key.
	Rule Rule `yaml:"policy"`
	// FilterTags keeps only the tags matching a pattern, and orders them by
	// an extracted value. Nil keeps every tag.
	FilterTags *FilterTags `yaml:"filterTags"`
	// Exclude holds RE2 patterns of tags to drop, in addition to the
	// defaults of package policy.
	Exclude []string `yaml:"exclude"`
	// ExcludeReplacesDefaults makes Exclude replace the default exclusions
	// instead of adding to them, as a Flux ImageRepository's exclusionList
	// does. Images made from Flux objects set it when the exclusionList is
	// given.
	ExcludeReplacesDefaults bool `yaml:"excludeReplacesDefaults"`
	// Digest says when the digest of the latest tag is resolved and pinned.
	// It defaults to never.
	Digest policy.DigestMode `yaml:"digest" enum:"always,ifNotPresent,never"`
	// Platform is os/arch[/variant] (linux/arm64, linux/arm/v7): the
	// platform whose digest is pinned when the tag is a multi-platform
	// index. Empty pins the index digest. It is an imagebump extension,
	// absent from Flux.
	Platform string `yaml:"platform"`
	// Hold, when set and active, keeps the policy's markers where they are
	// (during an incident, say) while the policy is still selected and
	// reported. `imagebump hold` and `imagebump release` write and remove
	// it.
	Hold *Hold `yaml:"hold"`
	// MinAge, when set, keeps a tag from being a candidate until its image
	// is that old (the image's creation time: the OCI created annotation,
	// else the config's created; for a multi-platform image the newest
	// platform): a brand-new tag gets time to prove itself elsewhere first.
	MinAge time.Duration `yaml:"minAge"`
	// Verify, when set, makes a tag a candidate only if its digest carries
	// a valid cosign signature by a key or a keyless identity.
	Verify *Verify `yaml:"verify"`

	// Line is the line of the image's entry in the config file.
	Line int `yaml:"-"`

	policy *policy.Policy
}

// Verify says who must have signed an image for its tag to be a
// candidate: exactly one of Key and Keyless. Package verify documents the
// checks (docs/verify.md).
type Verify struct {
	// Key is a file of one or more PEM public keys (cosign.pub); any may
	// have signed.
	Key string `yaml:"key" config:"path"`
	// Keyless asks for a Sigstore (Fulcio) certificate with this OIDC
	// identity.
	Keyless *Keyless `yaml:"keyless"`
	// TrustedRoot is a Sigstore trusted_root.json for keyless signatures.
	// Empty means Sigstore's public-good instance, fetched through TUF.
	TrustedRoot string `yaml:"trustedRoot" config:"path"`
	// InsecureIgnoreTlog accepts keyless signatures without a
	// transparency log entry when an RFC 3161 timestamp proves their time.
	InsecureIgnoreTlog bool `yaml:"insecureIgnoreTlog"`
}

// Options returns the verify package's options for v.
func (v *Verify) Options() verify.Options {
	o := verify.Options{Key: v.Key, TrustedRoot: v.TrustedRoot, InsecureIgnoreTlog: v.InsecureIgnoreTlog}
	if k := v.Keyless; k != nil {
		o.Keyless = &verify.Keyless{Issuer: k.Issuer, IssuerRegexp: k.IssuerRegexp, Subject: k.Subject, SubjectRegexp: k.SubjectRegexp}
	}
	return o
}

// Keyless is the identity a keyless signature's certificate must carry:
// one of Issuer and IssuerRegexp, and one of Subject and SubjectRegexp.
// Regular expressions must match the whole value.
type Keyless struct {
	Issuer        string `yaml:"issuer"`
	IssuerRegexp  string `yaml:"issuerRegexp"`
	Subject       string `yaml:"subject"`
	SubjectRegexp string `yaml:"subjectRegexp"`
}

// Hold keeps a policy's markers still.
type Hold struct {
	// Reason says why, for the people who read plans, logs and pull
	// requests; it is required.
	Reason string `yaml:"reason"`
	// Until, when set, ends the hold at that time (RFC 3339, such as
	// 2026-12-24T00:00:00Z, or a date, 2026-12-24, meaning its midnight
	// UTC): the markers move again on the first cycle after it. Empty holds
	// until released.
	Until string `yaml:"until"`

	until time.Time
}

// UntilTime returns when the hold ends, or the zero time when it does not.
func (h *Hold) UntilTime() time.Time { return h.until }

// Active reports whether the hold keeps the markers still at now.
func (h *Hold) Active(now time.Time) bool {
	return h != nil && (h.until.IsZero() || now.Before(h.until))
}

// ParseHoldTime reads a hold's until: RFC 3339, or a date meaning its
// midnight UTC.
func ParseHoldTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write RFC 3339 (2026-12-24T00:00:00Z) or a date (2026-12-24)", s)
}

// Rule is an image policy's selection rule. Exactly one field is set.
type Rule struct {
	// SemVer is a Masterminds/semver v3 range: the highest version in it wins.
	SemVer string `yaml:"semver"`
	// Alphabetical is asc or desc: the last tag in that order wins.
	Alphabetical string `yaml:"alphabetical" enum:"asc,desc"`
	// Numerical is asc or desc: the last number in that order wins.
	Numerical string `yaml:"numerical" enum:"asc,desc"`
}

// FilterTags keeps the tags that match Pattern.
type FilterTags struct {
	// Pattern is an unanchored RE2 pattern.
	Pattern string `yaml:"pattern"`
	// Extract is a template ($name, ${name}, $1) expanded from the match;
	// the rule orders tags by it. Empty means the whole tag.
	Extract string `yaml:"extract"`
}

// Git is the repository a target keeps current.
type Git struct {
	// URL is the repository's URL: https://, http://, ssh://, file:// or
	// scp-like user@host:path. It carries no password.
	URL string `yaml:"url"`
	// Branch is the branch to read and, unless Push.Branch says otherwise,
	// to push to. Empty means the remote's default branch.
	Branch string `yaml:"branch"`
	// Paths are the directories or files, relative to the repository root,
	// that are scanned for markers. Empty means the whole repository.
	// They are not globs: Load refuses *, ? and [...]. Load stores them
	// cleaned (no trailing slash, no "./").
	Paths []string `yaml:"paths"`
	// Auth says where the Git credentials are. Nil means none.
	Auth *GitAuth `yaml:"auth"`
	// Timeout bounds each network operation with the remote (a clone, a
	// fetch, a push, listing its refs). Zero means gitwriter's defaults:
	// 2m, and 30m for a clone.
	Timeout time.Duration `yaml:"timeout"`
}

// GitAuth holds Git credentials, as file references. At most one method is
// set: TokenFile, UsernameFile with PasswordFile (HTTP), or SSHKeyFile (SSH).
type GitAuth struct {
	// TokenFile holds an HTTP access token.
	TokenFile string `yaml:"tokenFile" config:"secret"`
	// UsernameFile holds the user name for HTTP basic authentication.
	UsernameFile string `yaml:"usernameFile" config:"secret"`
	// PasswordFile holds the password for HTTP basic authentication.
	PasswordFile string `yaml:"passwordFile" config:"secret"`
	// SSHKeyFile holds a private SSH key (PEM or OpenSSH format).
	SSHKeyFile string `yaml:"sshKeyFile" config:"secret"`
	// SSHKeyPassphraseFile holds the passphrase of SSHKeyFile, if any.
	SSHKeyPassphraseFile string `yaml:"sshKeyPassphraseFile" config:"secret"`
	// KnownHostsFile is a known_hosts file that the SSH host key is checked
	// against. SSH URLs need it unless InsecureIgnoreHostKey is set.
	KnownHostsFile string `yaml:"knownHostsFile" config:"path"`
	// InsecureIgnoreHostKey turns SSH host key checking off.
	InsecureIgnoreHostKey bool `yaml:"insecureIgnoreHostKey"`
}

// Commit configures the commits imagebump makes.
type Commit struct {
	// Author is the commit's author and committer.
	Author Author `yaml:"author"`
	// MessageTemplate is a Go text/template for the commit message. Empty
	// means cycle.DefaultMessageTemplate: a subject naming the bumps, then a
	// line per policy and its files.
	MessageTemplate string `yaml:"messageTemplate"`
	// SigningKeyFile holds an ASCII-armored OpenPGP private key; when set,
	// commits are signed.
	SigningKeyFile string `yaml:"signingKeyFile" config:"secret"`
	// SigningPassphraseFile holds the passphrase of SigningKeyFile, if any.
	SigningPassphraseFile string `yaml:"signingPassphraseFile" config:"secret"`
	// FluxMessage, when set, makes the commit message Flux's: a template
	// written for an ImageUpdateAutomation, over Flux's template data. It
	// excludes MessageTemplate.
	FluxMessage *FluxMessage `yaml:"fluxMessage"`
}

// FluxMessage is a commit message template written for Flux's
// ImageUpdateAutomation, rendered as Flux renders it (package
// internal/fluxmsg).
type FluxMessage struct {
	// Automation is the ImageUpdateAutomation's NAMESPACE/NAME, given to the
	// template as .AutomationObject.
	Automation string `yaml:"automation"`
	// APIVersion is the automation's apiVersion, which decides the data:
	// image.toolkit.fluxcd.io/v1 (the default) or
	// image.toolkit.fluxcd.io/v1beta2, whose templates may still use
	// .Updated and .Changed.ImageResult.
	APIVersion string `yaml:"apiVersion" enum:"image.toolkit.fluxcd.io/v1,image.toolkit.fluxcd.io/v1beta2"`
	// Template is the automation's messageTemplate. Empty means Flux's
	// default message.
	Template string `yaml:"template"`
	// Values are the automation's messageTemplateValues, given to the
	// template as .Values.
	Values []TemplateValue `yaml:"values"`
}

// TemplateValue is one entry of FluxMessage.Values.
type TemplateValue struct {
	// Name is the key the template reads: {{ .Values.NAME }}.
	Name string `yaml:"name"`
	// Value is its value.
	Value string `yaml:"value"`
}

// Author is a commit author. Load fills an empty Name with
// DefaultAuthorName and an empty Email with DefaultAuthorEmail.
type Author struct {
	// Name is the author's name.
	Name string `yaml:"name"`
	// Email is the author's email address.
	Email string `yaml:"email"`
}

// Push says where commits go.
type Push struct {
	// Branch is the branch to push to. Empty means Git.Branch.
	Branch string `yaml:"branch"`
	// Refspec, when set, is pushed too, after Branch (or Git.Branch
	// without one), as Flux's git.push.refspec is: SRC:DST, such as
	// refs/heads/auto:refs/for/main for Gerrit or AGit with Branch: auto.
	// It takes no '+' and no empty source.
	Refspec string `yaml:"refspec"`
	// Options are Git push options sent with every push, KEY=VALUE or
	// KEY, as Flux's git.push.options (GitLab's merge_request.create,
	// AGit's topic).
	Options []string `yaml:"options"`
	// PullRequest, when set, opens or updates one pull request from Branch
	// to Git.Branch.
	PullRequest *PullRequest `yaml:"pullRequest"`
}

// PullRequest configures the pull request opened from the push branch.
type PullRequest struct {
	// Provider is the forge's API: github, gitlab or gitea.
	Provider string `yaml:"provider" enum:"github,gitlab,gitea"`
	// APIURL is the forge's API base URL. Empty means the provider's public
	// default for github and the Git URL's host for gitlab and gitea.
	APIURL string `yaml:"apiURL"`
	// TokenFile holds the API token. Empty means Git.Auth.TokenFile.
	TokenFile string `yaml:"tokenFile" config:"secret"`
	// Title is a Go text/template for the pull request's title. Empty means
	// cycle.DefaultTitleTemplate.
	Title string `yaml:"title"`
	// Labels are added to the pull request.
	Labels []string `yaml:"labels"`
}

// Webhook is one registry webhook endpoint of `imagebump serve`, POST
// /hook/NAME. Exactly one of SecretFile and TokenFile is set: requests are
// authenticated by an HMAC-SHA256 signature of the body made with the
// secret (X-Hub-Signature-256: sha256=HEX), or by the token as a bearer
// token (Authorization: Bearer TOKEN). Both files are read at each request,
// so a rotated secret takes effect without a reload.
type Webhook struct {
	// Name is the endpoint's name, a lowercase RFC 1123 label: the last
	// element of its path, and the hook label of its metrics.
	Name string `yaml:"name"`
	// SecretFile holds the HMAC-SHA256 key that signs each request body.
	SecretFile string `yaml:"secretFile" config:"secret"`
	// TokenFile holds the bearer token each request carries.
	TokenFile string `yaml:"tokenFile" config:"secret"`
	// TokenInQuery also accepts the token as the query parameter token
	// (POST /hook/NAME?token=TOKEN), for senders that can set neither a
	// header nor a signature (Docker Hub, Quay). A URL is logged and shown
	// in more places than a header, so it is off unless asked for, and
	// only with TokenFile.
	TokenInQuery bool `yaml:"tokenInQuery"`

	// Line is the line of the webhook's entry in the config file.
	Line int `yaml:"-"`
}

// Target is one repository (or branch and paths of one) that imagebump
// keeps current, with the image policies it applies.
type Target struct {
	// Name identifies the target in logs, metrics and webhook paths.
	Name string `yaml:"name"`
	// Git is the target's repository.
	Git *Git `yaml:"git"`
	// Commit configures the target's commits. Load fills it with the default
	// author when absent.
	Commit *Commit `yaml:"commit"`
	// Push says where the target's commits go. Nil pushes to Git.Branch.
	Push *Push `yaml:"push"`
	// Schedule is when `serve` runs the target; see Config.Schedule.
	Schedule string `yaml:"schedule"`
	// Policies are path.Match globs over image names; the target applies
	// the images whose name matches one of them. Empty means every image. A
	// glob without a colon is in the default namespace, as names are: "app*"
	// means "default:app*"; "*:*" matches every image.
	Policies []string `yaml:"policies"`

	// Line is the line of the target's entry (or, for the top-level target,
	// of the git key) in the config file.
	Line int `yaml:"-"`
}

// Load reads and validates the config file at path. Errors about the
// content are *Error values joined together; relative file paths in the
// config are resolved against path's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("resolving config directory: %w", err)
	}
	return parse(data, path, dir)
}

// Parse decodes and validates a config held in data. filename names the
// source in error messages, and its directory is the base of relative file
// paths. Parse does no I/O. Errors are *Error values joined together,
// ordered by position, each starting with "filename:line:".
func Parse(data []byte, filename string) (*Config, error) {
	return parse(data, filename, filepath.Dir(filename))
}

// ParseDir is Parse with relative file paths resolved against baseDir:
// for a config read from a pipe (-c /dev/stdin), whose folder means
// nothing.
func ParseDir(data []byte, filename, baseDir string) (*Config, error) {
	return parse(data, filename, baseDir)
}

func parse(data []byte, filename, baseDir string) (*Config, error) {
	c := &Config{File: filename}
	d := newDecoder(filename)
	root := d.root(data)
	if root != nil {
		d.decode(root, reflectValue(c), "")
	}
	// Validation runs even after decoding problems, so that a user sees
	// every problem at once; it skips values that failed to decode.
	if !d.tooBig {
		v := &validator{decoder: d, c: c}
		v.validate()
		c.keyLines = make(map[string]int, len(d.keys))
		for k, p := range d.keys {
			c.keyLines[k] = p.line
		}
		resolvePaths(reflectValue(c), baseDir)
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// Image returns the image policy called name, written NAME or
// NAMESPACE:NAME; NAME is short for default:NAME.
func (c *Config) Image(name string) (*Image, bool) {
	i, ok := c.images[NormalizeName(name)]
	if !ok {
		return nil, false
	}
	return &c.Images[i], true
}

// Has reports whether the config has an image policy called name (NAME or
// NAMESPACE:NAME). It is safe for concurrent use.
func (c *Config) Has(name string) bool {
	_, ok := c.images[NormalizeName(name)]
	return ok
}

// Targets returns the targets of the config: the entries of the targets key,
// or, when the file uses the top-level git key instead, one target named
// DefaultTargetName that applies every image. It returns nil when the config
// has neither.
func (c *Config) Targets() []Target {
	if len(c.TargetList) > 0 {
		return append([]Target(nil), c.TargetList...)
	}
	if c.Git == nil {
		return nil
	}
	return []Target{{
		Name:     DefaultTargetName,
		Git:      c.Git,
		Commit:   c.Commit,
		Push:     c.Push,
		Schedule: c.Schedule,
		Line:     c.gitLine(),
	}}
}

// gitLine is the line of the top-level git key, kept by validate.
func (c *Config) gitLine() int {
	if c.Git == nil {
		return 0
	}
	return c.keyLines["git"]
}

// Policy returns the image's compiled policy. It is nil only for an Image
// that did not come from Load or Parse.
func (im *Image) Policy() *policy.Policy {
	return im.policy
}

// WithPolicy returns a copy of the image that selects with p instead of
// its own rule (`imagebump tags POLICY --semver ...` tries another rule
// with the policy's other settings).
func (im *Image) WithPolicy(p *policy.Policy) *Image {
	c := *im
	c.policy = p
	return &c
}

// Spec returns the image's policy as package policy takes it.
func (im *Image) Spec() policy.Spec {
	var s policy.Spec
	s.SemVer = im.Rule.SemVer
	s.Alphabetical = im.Rule.Alphabetical
	s.Numerical = im.Rule.Numerical
	if im.FilterTags != nil {
		s.FilterPattern = im.FilterTags.Pattern
		s.FilterExtract = im.FilterTags.Extract
	}
	s.Exclude = append([]string(nil), im.Exclude...)
	s.ExcludeReplacesDefaults = im.ExcludeReplacesDefaults
	s.Digest = im.Digest
	return s
}

// Selects reports whether the target applies the image called name (NAME or
// NAMESPACE:NAME).
func (t Target) Selects(name string) bool {
	if len(t.Policies) == 0 {
		return true
	}
	name = NormalizeName(name)
	for _, g := range t.Policies {
		if ok, _ := path.Match(NormalizeName(g), name); ok {
			return true
		}
	}
	return false
}

// NormalizeName returns an image name in NAMESPACE:NAME form: a name without
// a colon is put in DefaultNamespace.
func NormalizeName(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return DefaultNamespace + ":" + name
}

// FileSizeLimit returns MaxFileSize in bytes, or 0 for the default (and
// for a size that does not parse, which validation refuses).
func (c *Config) FileSizeLimit() int64 {
	if c == nil || c.MaxFileSize == "" {
		return 0
	}
	n, _ := ParseByteSize(c.MaxFileSize)
	return n
}

// ParseByteSize parses a size as maxFileSize takes it: a whole number of
// bytes, or one followed by KiB, MiB or GiB.
func ParseByteSize(s string) (int64, error) {
	num, unit := s, int64(1)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, unit = strings.TrimSpace(n), u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err == nil && n > 0 && n > (1<<40)/unit || errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("%q is more than the largest size taken, 1024GiB", s)
	}
	if err == nil && n <= 0 {
		return 0, fmt.Errorf("%q is not a size a file can be read within: give a positive one, such as 4MiB", s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: write a whole number of bytes, or one with KiB, MiB or GiB, such as 4MiB", s)
	}
	return n * unit, nil
}
