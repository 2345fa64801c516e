// Package fluxmsg renders commit message templates written for Flux's
// ImageUpdateAutomation, so that a template moved from Flux gives the text
// Flux would have committed.
//
// The data is Flux's, field for field: .AutomationObject, .Changed (with
// .FileChanges, .Changes and .Objects), .Values, and, for templates of
// image.toolkit.fluxcd.io/v1beta2 automations, the deprecated .Updated and
// .Changed.ImageResult. The functions are Flux's: text/template's and
// Sprig's hermetic set. It is built from imagebump's own list of changes
// (msgtemplate.Data) and the repository's files after the edit, which say
// which Kubernetes object each change is in.
//
// Where Flux depends on Go's map order (the order of .Changed.Changes and
// .Updated.Images, and which file wins in .Changed.Objects when two hold the
// same object), this package orders by file name, then object, then line,
// so the same changes always give the same message.
package fluxmsg

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/types"

	"github.com/imagebump/imagebump/internal/msgtemplate"
	"github.com/imagebump/imagebump/internal/printable"
)

// API versions of ImageUpdateAutomation, which decide the template data.
const (
	APIVersionV1      = "image.toolkit.fluxcd.io/v1"
	APIVersionV1beta2 = "image.toolkit.fluxcd.io/v1beta2"
)

// DefaultTemplate is Flux's commit message when an automation sets no
// template.
const DefaultTemplate = "Update from image update automation"

// Input is what Render needs.
type Input struct {
	// Automation is the ImageUpdateAutomation's NAMESPACE/NAME, given to
	// the template as .AutomationObject.
	Automation string
	// APIVersion is the automation's apiVersion: APIVersionV1 (the
	// default when empty) or APIVersionV1beta2, whose templates also get
	// .Updated and .Changed.ImageResult.
	APIVersion string
	// Template is the messageTemplate; empty means DefaultTemplate.
	Template string
	// Values are the messageTemplateValues, given as .Values.
	Values map[string]string
	// UpdatePath is the automation's update.path, relative to the
	// repository root; file names in .Changed are relative to it, as
	// Flux's are. Empty means the root.
	UpdatePath string
	// Changes are the edits made, with file names relative to the
	// repository root, as msgtemplate.Data has them.
	Changes []msgtemplate.Change
	// Updated are the policies that moved, for the image references of
	// .Updated (v1beta2 only).
	Updated []msgtemplate.PolicyUpdate
	// Files is the repository after the edits, rooted at its top (an
	// os.Root's FS keeps reads inside it). Each changed file is read once,
	// to find the object holding each change.
	Files fs.FS
}

// ErrRemovedField is matched (with errors.Is) by every *RemovedFieldError.
var ErrRemovedField = &RemovedFieldError{}

// RemovedFieldError is a v1 template that uses a field Flux removed.
type RemovedFieldError struct {
	// Field is ".Updated" or ".Changed.ImageResult".
	Field string
}

// Error says what to use instead.
func (e *RemovedFieldError) Error() string {
	instead := "'.Changed'"
	if e.Field == ".Changed.ImageResult" {
		instead = "'.Changed.FileChanges' or '.Changed.Objects'"
	}
	return fmt.Sprintf("the template uses '%s', which Flux removed in %s: use %s instead (Flux refuses this template too)", e.Field, APIVersionV1, instead)
}

// Is reports whether target is a *RemovedFieldError.
func (e *RemovedFieldError) Is(target error) bool {
	_, ok := target.(*RemovedFieldError)
	return ok
}

// Render builds the template data from in and runs the template. The text
// is returned as the template wrote it, as Flux commits it: no line break
// is added or removed.
func Render(in Input) (string, error) {
	data, err := Build(in)
	if err != nil {
		return "", err
	}
	return Execute(in.APIVersion, in.Template, data)
}

// Execute runs text over data (a TemplateData or LegacyTemplateData), with
// Flux's functions. An empty text is DefaultTemplate.
func Execute(apiVersion, text string, data any) (string, error) {
	if text == "" {
		text = DefaultTemplate
	}
	t, err := Parse(text)
	if err != nil {
		return "", err
	}
	var b msgtemplate.Limited
	if err := t.Execute(&b, data); err != nil {
		if rf := removedField(apiVersion, err); rf != nil {
			return "", rf
		}
		return "", fmt.Errorf("running the Flux message template: %w", err)
	}
	if err := msgtemplate.CheckText(b.String()); err != nil {
		return "", fmt.Errorf("running the Flux message template: %w", err)
	}
	return b.String(), nil
}

// Parse parses a Flux message template with Flux's functions, bounded:
// the makers of lists and strings (makersBounded) stop at maxCount items
// or before a result past msgtemplate.MaxLen, and every function and
// range is bounded as msgtemplate.Bound and BoundRanges bound them, so
// that a template from a repository cannot hold the process for minutes
// or take gigabytes of memory, as Flux's can.
func Parse(text string) (*template.Template, error) {
	t, err := template.New("commit message").Funcs(msgtemplate.Bound(makersBounded(), time.Now().Add(maxRun), maxRun)).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing the Flux message template: %w", err)
	}
	msgtemplate.BoundRanges(t)
	return t, nil
}

// maxCount bounds the items of a list or the copies of repeat.
const maxCount = 10000

// maxRun is msgtemplate.MaxRun, a variable for tests.
var maxRun = msgtemplate.MaxRun

// makersBounded is Sprig's hermetic set with its functions that make a
// list or a string of any length checked before they allocate.
func makersBounded() template.FuncMap {
	funcs := sprig.HermeticTxtFuncMap()
	// Each maker is checked before it allocates; what it returns is
	// checked again by msgtemplate.Bound.
	fits := func(name string, n int) error {
		if n < 0 || n > msgtemplate.MaxLen {
			return fmt.Errorf("%s: the result would be longer than a message may be (%d bytes)", name, msgtemplate.MaxLen)
		}
		return nil
	}
	repeat := funcs["repeat"].(func(int, string) string)
	funcs["repeat"] = func(n int, s string) (string, error) {
		if n > maxCount || n < 0 {
			return "", fmt.Errorf("repeat: %d items is over the %d a commit message template may make", n, maxCount)
		}
		if err := fits("repeat", n*len(s)); err != nil {
			return "", err
		}
		return repeat(n, s), nil
	}
	funcs["until"] = func(n int) ([]int, error) {
		step := 1
		if n < 0 {
			step = -1
		}
		return steps("until", 0, n, step)
	}
	funcs["untilStep"] = func(start, stop, step int) ([]int, error) {
		return steps("untilStep", start, stop, step)
	}
	funcs["seq"] = seqBounded
	for _, name := range []string{"indent", "nindent"} {
		f := funcs[name].(func(int, string) string)
		funcs[name] = func(spaces int, v string) (string, error) {
			if spaces < 0 || spaces > msgtemplate.MaxLen {
				return "", fmt.Errorf("%s: %d spaces", name, spaces)
			}
			if err := fits(name, len(v)+1+spaces*(strings.Count(v, "\n")+1)); err != nil {
				return "", err
			}
			return f(spaces, v), nil
		}
	}
	replace := funcs["replace"].(func(string, string, string) string)
	funcs["replace"] = func(old, new, src string) (string, error) {
		if err := fits("replace", len(src)+strings.Count(src, old)*max(len(new)-len(old), 0)); err != nil {
			return "", err
		}
		return replace(old, new, src), nil
	}
	wrapWith := funcs["wrapWith"].(func(int, string, string) string)
	funcs["wrapWith"] = func(l int, sep, str string) (string, error) {
		if err := fits("wrapWith", len(str)+(len(str)/max(l, 1)+1)*len(sep)); err != nil {
			return "", err
		}
		return wrapWith(l, sep, str), nil
	}
	// A regular expression's matches, times what each is replaced by
	// ($1 in repl may take a match's length again), checked before the
	// replacement; the must- forms are the same, as Sprig's are but for
	// a bad expression, which both report as an error here.
	replaceAll := func(name string, literal bool) func(regex, s, repl string) (string, error) {
		return func(regex, s, repl string) (string, error) {
			re, err := regexp.Compile(regex)
			if err != nil {
				return "", err
			}
			per := len(repl) + strings.Count(repl, "$")*len(s)
			if err := fits(name, len(s)+len(re.FindAllStringIndex(s, msgtemplate.MaxLen+1))*per); err != nil {
				return "", err
			}
			if literal {
				return re.ReplaceAllLiteralString(s, repl), nil
			}
			return re.ReplaceAllString(s, repl), nil
		}
	}
	for _, name := range []string{"regexReplaceAll", "mustRegexReplaceAll"} {
		funcs[name] = replaceAll(name, false)
	}
	for _, name := range []string{"regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"} {
		funcs[name] = replaceAll(name, true)
	}
	return funcs
}

// steps is Sprig's untilStep (start, start+step, ... short of stop), made
// without overflow and failing past maxCount items instead of making them.
func steps(name string, start, stop, step int) ([]int, error) {
	v := []int{}
	more := func(i int) bool {
		switch {
		case stop < start:
			return step < 0 && i > stop
		default:
			return step > 0 && i < stop
		}
	}
	for i := start; more(i); {
		if len(v) == maxCount {
			return nil, fmt.Errorf("%s: more than the %d items a commit message template may make", name, maxCount)
		}
		v = append(v, i)
		next := i + step
		if (step > 0 && next < i) || (step < 0 && next > i) {
			break // past the int range: nothing more short of stop
		}
		i = next
	}
	return v, nil
}

// seqBounded is Sprig's seq, as a Unix seq: seq END, seq START END, seq
// START STEP END, the numbers joined by spaces, made by steps.
func seqBounded(params ...int) (string, error) {
	var v []int
	var err error
	switch len(params) {
	case 1:
		inc := 1
		if params[0] < 1 {
			inc = -1
		}
		v, err = steps("seq", 1, params[0]+inc, inc)
	case 2:
		inc := 1
		if params[1] < params[0] {
			inc = -1
		}
		v, err = steps("seq", params[0], params[1]+inc, inc)
	case 3:
		start, step, end := params[0], params[1], params[2]
		inc := 1
		if end < start {
			inc = -1
			if step > 0 {
				return "", nil
			}
		}
		v, err = steps("seq", start, end+inc, step)
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	out := make([]string, len(v))
	for i, n := range v {
		out[i] = strconv.Itoa(n)
	}
	return strings.Join(out, " "), nil
}

// removedField turns text/template's error about a field a v1 template
// cannot have into a *RemovedFieldError.
func removedField(apiVersion string, err error) error {
	if apiVersion == APIVersionV1beta2 {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "can't evaluate field Updated in type fluxmsg.TemplateData"):
		return &RemovedFieldError{Field: ".Updated"}
	case strings.Contains(msg, "can't evaluate field ImageResult in type fluxmsg.Result"):
		return &RemovedFieldError{Field: ".Changed.ImageResult"}
	}
	return nil
}

// Check parses text and runs it over sample data of apiVersion's shape,
// so that a template naming a field Flux does not give is refused when the
// config loads. The error says what is wrong, not where: the caller adds
// the file and line.
func Check(apiVersion, text string) error {
	switch apiVersion {
	case "", APIVersionV1, APIVersionV1beta2:
	default:
		return fmt.Errorf("apiVersion %q: use %s or %s", apiVersion, APIVersionV1, APIVersionV1beta2)
	}
	_, err := Execute(apiVersion, text, sample(apiVersion))
	return err
}

// Build returns the template data of in: a TemplateData, or a
// LegacyTemplateData for APIVersionV1beta2.
func Build(in Input) (any, error) {
	ns, n, ok := strings.Cut(in.Automation, "/")
	if !ok {
		return nil, fmt.Errorf("automation %q: want NAMESPACE/NAME", in.Automation)
	}
	auto := types.NamespacedName{Namespace: ns, Name: n}
	files := map[string]ObjectChanges{}
	images := map[string]FileResult{}
	refs := map[string]ImageRef{}
	for _, u := range in.Updated {
		s := u.Repository + ":" + u.Tag
		if u.Digest != "" {
			s += "@" + u.Digest
		}
		r, err := name.ParseReference(s, name.WeakValidation)
		if err != nil {
			return nil, fmt.Errorf("policy %s: image reference %q: %w", u.Policy, s, err)
		}
		pns, pn, _ := strings.Cut(u.Policy, ":")
		refs[u.Policy] = imageRef{Reference: r, policy: types.NamespacedName{Namespace: pns, Name: pn}}
	}
	finder := objectFinder{files: in.Files, cache: map[string][]span{}}
	for _, c := range in.Changes {
		oid, err := finder.at(c.File, c.Line)
		if err != nil {
			return nil, err
		}
		// The repository's values reach the message escaped (see
		// cycle.NewMessageData).
		rel := printable.String(relative(in.UpdatePath, c.File))
		oid.Name, oid.Namespace, oid.Kind = printable.String(oid.Name), printable.String(oid.Namespace), printable.String(oid.Kind)
		c.Old = printable.String(c.Old)
		setter := c.Policy
		if c.Field != "" && c.Field != "image" {
			setter += ":" + c.Field
		}
		if files[rel] == nil {
			files[rel] = ObjectChanges{}
		}
		files[rel][oid] = append(files[rel][oid], Change{OldValue: c.Old, NewValue: c.New, Setter: setter})
		if ref, ok := refs[c.Policy]; ok {
			fr, ok := images[rel]
			if !ok {
				fr = FileResult{Objects: map[ObjectIdentifier][]ImageRef{}}
				images[rel] = fr
			}
			if !containsRef(fr.Objects[oid], ref) {
				fr.Objects[oid] = append(fr.Objects[oid], ref)
			}
		}
	}
	if in.APIVersion == APIVersionV1beta2 {
		ir := ImageResult{Files: images}
		return LegacyTemplateData{
			AutomationObject: auto,
			Updated:          ir,
			Changed:          LegacyResult{ImageResult: ir, FileChanges: files},
			Values:           in.Values,
		}, nil
	}
	return TemplateData{AutomationObject: auto, Changed: Result{FileChanges: files}, Values: in.Values}, nil
}

func containsRef(refs []ImageRef, r ImageRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// relative returns file relative to dir (both slash-separated, relative to
// the repository root), or file when it is not below dir.
func relative(dir, file string) string {
	dir = path.Clean("/" + dir)
	file = path.Clean("/" + file)
	if dir == "/" {
		return file[1:]
	}
	if rest, ok := strings.CutPrefix(file, dir+"/"); ok {
		return rest
	}
	return file[1:]
}

// sample is plausible data of apiVersion's shape, for Check.
func sample(apiVersion string) any {
	oid := ObjectIdentifier{}
	oid.APIVersion, oid.Kind, oid.Name, oid.Namespace = "apps/v1", "Deployment", "web", "apps"
	files := map[string]ObjectChanges{"web.yaml": {oid: {{OldValue: "ghcr.io/acme/web:1.0.0", NewValue: "ghcr.io/acme/web:1.1.0", Setter: "apps:web"}}}}
	auto := types.NamespacedName{Namespace: "flux-system", Name: "fleet"}
	values := map[string]string{}
	if apiVersion != APIVersionV1beta2 {
		return TemplateData{AutomationObject: auto, Changed: Result{FileChanges: files}, Values: values}
	}
	r, err := name.ParseReference("ghcr.io/acme/web:1.1.0")
	if err != nil {
		panic(err) // a constant
	}
	ref := imageRef{Reference: r, policy: types.NamespacedName{Namespace: "apps", Name: "web"}}
	ir := ImageResult{Files: map[string]FileResult{"web.yaml": {Objects: map[ObjectIdentifier][]ImageRef{oid: {ref}}}}}
	return LegacyTemplateData{AutomationObject: auto, Updated: ir, Changed: LegacyResult{ImageResult: ir, FileChanges: files}, Values: values}
}

var errNoFiles = errors.New("no repository files given (Input.Files)")
