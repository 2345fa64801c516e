package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sync/semaphore"
	"gopkg.in/yaml.v3"
)

// env is what rewriting one file needs to know about policies.
type env struct {
	images map[string]Image
	known  func(policy string) bool
	// scanOnly records markers and the problems that do not depend on the
	// policies (see outcome.static), and plans no edit.
	scanOnly bool
}

// scanEnv is the env of a scan for the marker index.
var scanEnv = env{scanOnly: true}

// edit replaces the bytes of one marked scalar.
type edit struct {
	span
	repl   string
	node   *yaml.Node
	change Change
}

// outcome is the result of rewriting one file.
type outcome struct {
	markers  []Marker
	changes  []Change
	problems []Problem
	edits    []edit // applied edits, in file order
	out      []byte // the new bytes; nil when the file does not change

	// static are the problems in problems that depend on the file alone,
	// not on which policies exist or what they selected: invalid YAML,
	// malformed markers, markers where no scalar is. The marker index
	// keeps them.
	static []Problem
	// inFlow tells, for each marker, whether its scalar sits in a flow
	// collection, where it is never rewritten.
	inFlow []bool
	// after is the scan of out (markers, static problems) once the edit is
	// verified, for the marker index.
	after *outcome
}

// Errors for markers that sit where they cannot apply.
var (
	errNoScalar = errors.New("the marker applies to no scalar value; put it after the value it owns, on the same line (a marker alone on its line is read only above a list item, or above a value written on the line after its key, and only when that value has no comment of its own)")
	errFlow     = errors.New("the marker follows a flow collection ({...} or [...]) and belongs to no scalar; mark a scalar value instead")
	errInFlow   = errors.New("the marked scalar is inside a flow collection ({...} or [...]); only scalars in block collections are rewritten")
	errBlock    = errors.New("the marked scalar is a block scalar (| or >); only single-line scalars are rewritten")
	errEmpty    = errors.New("the marked value is empty; write the current value so it can be replaced")
)

// emptyItemError reports a marker on an empty list item ("- # {...}"),
// which YAML gives to the next item as its head comment, or to no node
// when it is the last.
type emptyItemError struct {
	next int // the next item's line, or 0
}

func (e *emptyItemError) Error() string {
	const fix = "write the current value on the marked item: - IMAGE:TAG # {\"$imagepolicy\": ...}"
	if e.next == 0 {
		return "the marker is on an empty list item, so it applies to no value; " + fix
	}
	return fmt.Sprintf("the marker is on an empty list item, and YAML gives its comment to the next item, line %d, which is left alone (it would become the image); %s", e.next, fix)
}

// UnknownPolicyError reports a marker naming a policy that does not exist.
type UnknownPolicyError struct {
	// Policy is the reference the marker names ("ns:name").
	Policy string
	// Hint, when set, suggests the policy meant (the caller knows the
	// names; setters does not).
	Hint string
}

// Error implements error.
func (e *UnknownPolicyError) Error() string {
	msg := "unknown policy " + e.Policy + ": no image policy of that name is configured"
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// SyntaxError reports a file that is not valid YAML. Such files are skipped.
type SyntaxError struct {
	// Line is the 1-based line the parser stopped at, or 0.
	Line int
	// Msg is the parser's message.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string { return "invalid YAML, file skipped: " + e.Msg }

// VerifyError reports an edit that would have changed more than the marked
// scalars. The file is left untouched.
type VerifyError struct {
	// Err says what would have changed.
	Err error
}

// Error implements error.
func (e *VerifyError) Error() string {
	return "edit not applied, file left as is: after the edit the file would read differently: " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

var yamlErrLine = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// parseDocs parses every document of a YAML stream.
func parseDocs(src []byte) (docs []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			// yaml.v3 panics on a few malformed inputs; treat that as a
			// syntax error rather than crash the run.
			docs, err = nil, &SyntaxError{Msg: fmt.Sprintf("the YAML parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			se := &SyntaxError{Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
			if m := yamlErrLine.FindStringSubmatch(err.Error()); m != nil {
				se.Line, _ = strconv.Atoi(m[1])
				se.Msg = m[2]
			}
			return nil, se
		}
		docs = append(docs, &n)
	}
}

// rewriter finds the markers of one parsed file and plans its edits.
type rewriter struct {
	file string
	ix   *lineIndex
	env  env
	out  *outcome

	// claimed are the lines of marker comments already reported, so that
	// a stray marker written the same way elsewhere is placed at its own
	// line (yaml.v3 does not record where comments are).
	claimed map[int]bool
}

// claim records line as that of a marker comment reported.
func (r *rewriter) claim(line int) {
	if r.claimed == nil {
		r.claimed = map[int]bool{}
	}
	r.claimed[line] = true
}

// parseBudget is how many bytes of YAML the process parses at once, in
// every run and scan together (serve runs several targets' cycles at
// once). A parsed file and its verification take about 75 times its size
// (a 2 MiB file, 155 MB), and runs read files with as many workers as
// there are cores: without a bound, a few large marked files read at once
// would take gigabytes. Small files, nearly all of a fleet, go on side
// by side; a file larger than the budget waits for the others and is
// parsed alone, and the files asked for after it wait for that one parse
// (the gate serves in order). init's and discover's parses, one-shot
// commands, are outside it.
// (Variables, so that a test can shrink them.)
var (
	parseBudget int64 = 2 << 20
	// parsing holds the bytes being parsed, within parseBudget.
	parsing = semaphore.NewWeighted(parseBudget)
)

// onParse is a test hook, told of the bytes a parse takes (a positive
// n) and gives back (negative).
var onParse func(n int64)

// rewrite finds the markers in one file and computes its new bytes. file is
// the name used in reports.
func rewrite(file string, src []byte, e env) outcome {
	w := min(int64(len(src)), parseBudget)
	_ = parsing.Acquire(context.Background(), w) // never fails without a deadline
	if onParse != nil {
		onParse(w)
	}
	defer func() {
		if onParse != nil {
			onParse(-w)
		}
		parsing.Release(w)
	}()
	out := rewriteLines(file, src, e)
	if ix := newLineIndex(src); ix.odd {
		// Lines reach users as an editor counts them. An edit changes no
		// line break, so the scan after it counts lines as src does.
		editorLines(ix, &out)
		if out.after != nil {
			editorLines(ix, out.after)
		}
	}
	return out
}

// Markers returns the markers of one file's bytes, as Apply finds them,
// named file; a file that does not parse has none.
func Markers(file string, src []byte) []Marker {
	return rewrite(file, src, scanEnv).markers
}

// editorLines converts the lines of out from yaml.v3's count to an
// editor's.
func editorLines(ix *lineIndex, out *outcome) {
	for i := range out.markers {
		out.markers[i].Line = ix.editorLine(out.markers[i].Line)
	}
	for i := range out.changes {
		out.changes[i].Line = ix.editorLine(out.changes[i].Line)
	}
	for i := range out.problems {
		out.problems[i].Line = ix.editorLine(out.problems[i].Line)
	}
	for i := range out.static {
		out.static[i].Line = ix.editorLine(out.static[i].Line)
	}
}

// rewriteLines is rewrite with yaml.v3's line numbers.
func rewriteLines(file string, src []byte, e env) outcome {
	var out outcome
	docs, err := parseDocs(src)
	if err != nil {
		var se *SyntaxError
		line := 0
		if errors.As(err, &se) {
			line = se.Line
			if line == 0 {
				// yaml.v3 gives no line for bytes it refuses outright.
				if l, what := badByte(src); l > 0 {
					line, se.Msg = l, what+" ("+se.Msg+")"
				}
			}
		}
		p := Problem{File: file, Line: line, Err: err}
		out.problems = append(out.problems, p)
		out.static = append(out.static, p)
		return out
	}
	r := &rewriter{file: file, ix: newLineIndex(src), env: e, out: &out}
	for _, d := range docs {
		r.visit(d, true, false)
	}
	if len(out.edits) == 0 {
		return out
	}
	slices.SortFunc(out.edits, func(a, b edit) int { return a.start - b.start })
	var buf bytes.Buffer
	buf.Grow(len(src) + 64)
	prev := 0
	for _, ed := range out.edits {
		buf.Write(src[prev:ed.start])
		buf.WriteString(ed.repl)
		prev = ed.end
	}
	buf.Write(src[prev:])
	newSrc := buf.Bytes()
	newDocs, err := verify(docs, newSrc, out.edits)
	if err != nil {
		out.problems = append(out.problems, Problem{File: file, Line: out.edits[0].change.Line, Err: &VerifyError{Err: err}})
		out.edits = nil
		return out
	}
	for _, ed := range out.edits {
		out.changes = append(out.changes, ed.change)
	}
	out.out = newSrc
	// The new bytes are parsed already: their scan for the index costs a
	// walk of the tree.
	after := &outcome{}
	sr := &rewriter{file: file, ix: newLineIndex(newSrc), env: scanEnv, out: after}
	for _, d := range newDocs {
		sr.visit(d, true, false)
	}
	out.after = after
	return out
}

// problem records a problem that depends on the policies: which exist,
// and what they selected.
func (r *rewriter) problem(line int, policy string, err error) {
	r.out.problems = append(r.out.problems, Problem{File: r.file, Line: line, Policy: policy, Err: err})
}

// staticProblem records a problem that depends on the file alone.
func (r *rewriter) staticProblem(line int, policy string, err error) {
	p := Problem{File: r.file, Line: line, Policy: policy, Err: err}
	r.out.problems = append(r.out.problems, p)
	r.out.static = append(r.out.static, p)
}

// visit walks a node. value says whether n is a value (a document's root, a
// mapping value or a sequence item) rather than a mapping key; inFlow
// whether it sits inside a flow collection.
func (r *rewriter) visit(n *yaml.Node, value, inFlow bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			r.visit(c, true, false)
		}
		// After the content: a foot comment may repeat a marker found
		// there (commentLine).
		r.stray(n, n.HeadComment, n.LineComment, n.FootComment, errNoScalar)
	case yaml.MappingNode, yaml.SequenceNode:
		flow := n.Style&yaml.FlowStyle != 0
		lineErr := errNoScalar
		if flow {
			lineErr = errFlow
		}
		r.stray(n, n.HeadComment, n.LineComment, n.FootComment, lineErr)
		for i, c := range n.Content {
			r.visit(c, n.Kind == yaml.SequenceNode || i%2 == 1, inFlow || flow)
		}
	case yaml.AliasNode:
		r.stray(n, n.HeadComment, n.LineComment, n.FootComment,
			fmt.Errorf("the marker is on the alias *%s; aliases are left alone, so mark the anchored scalar &%s instead", n.Value, n.Value))
	case yaml.ScalarNode:
		if !value {
			r.stray(n, n.HeadComment, n.LineComment, n.FootComment, errNoScalar)
			return
		}
		// As Flux does, the line comment decides when there is one;
		// otherwise a one-line head comment may hold the marker.
		head := strings.TrimRight(n.HeadComment, "\n")
		comment, fromHead := n.LineComment, false
		if comment == "" && head != "" && !strings.Contains(head, "\n") {
			comment, fromHead = head, true
		}
		policy, field, ok, err := ParseMarker(comment)
		if !ok {
			r.stray(n, n.HeadComment, n.LineComment, n.FootComment, errNoScalar)
			return
		}
		if fromHead {
			r.stray(n, "", "", n.FootComment, errNoScalar)
		} else {
			r.stray(n, n.HeadComment, "", n.FootComment, errNoScalar)
		}
		if err != nil {
			r.staticProblem(n.Line, "", err)
			return
		}
		if fromHead {
			if l := r.emptyItemLine(n, head); l > 0 {
				r.claim(l)
				r.staticProblem(l, policy, &emptyItemError{next: n.Line})
				return
			}
		}
		r.marker(n, policy, field, fromHead, inFlow)
	}
}

// stray reports marker-like comments attached where no marker applies: the
// line comment of a collection, key or alias (lineErr), and head and foot
// comment lines that consist of a marker object alone.
func (r *rewriter) stray(n *yaml.Node, head, line, foot string, lineErr error) {
	if line != "" {
		if policy, _, ok, _ := ParseMarker(line); ok {
			r.staticProblem(r.lineCommentLine(n.Line, line), policy, lineErr)
		}
	}
	for _, c := range [2]string{head, foot} {
		if c == "" || !strings.Contains(strings.ToLower(c), markerKey) {
			continue
		}
		for _, l := range strings.Split(c, "\n") {
			if looksLikeMarker(l) {
				policy, _, _, _ := ParseMarker(l)
				at, item := r.commentLine(n.Line, l)
				err := errNoScalar
				if item {
					err = &emptyItemError{}
				}
				r.staticProblem(at, policy, err)
			}
		}
	}
}

// lineCommentLine finds the line, at or after from, that ends with the line
// comment c. yaml.v3 does not record where comments are.
func (r *rewriter) lineCommentLine(from int, c string) int {
	want := []byte(trimRight(c))
	for l := max(from, 1); l <= r.ix.lines(); l++ {
		if bytes.HasSuffix(bytes.TrimRight(r.ix.line(l), " \t"), want) {
			return l
		}
	}
	return from
}

// commentLine finds the line holding the comment c alone, or on an empty
// list item ("- # c", item), nearest to near, of those not claimed yet
// (else of all), and claims it.
func (r *rewriter) commentLine(near int, c string) (line int, item bool) {
	want := []byte(strings.TrimSpace(c))
	better := func(l int) bool {
		if line == 0 || r.claimed[line] != r.claimed[l] {
			return line == 0 || r.claimed[line]
		}
		return abs(l-near) < abs(line-near)
	}
	for l := 1; l <= r.ix.lines(); l++ {
		if it, ok := commentOn(r.ix.line(l), want); ok && better(l) {
			line, item = l, it
		}
	}
	if line == 0 {
		return near, false
	}
	r.claim(line)
	return line, item
}

// emptyItemLine returns the line of the empty list item ("- # c") whose
// comment c yaml.v3 made the head comment of n, a list item of its own
// ("- value"), or 0: when c is on a line of its own, or n is the value of
// the item c is on, written on the next line ("- # c" then "  value").
func (r *rewriter) emptyItemLine(n *yaml.Node, c string) int {
	line := r.ix.line(n.Line)
	if n.Column-1 > len(line) {
		return 0
	}
	if lead := line[:n.Column-1]; len(bytes.Trim(lead, " -")) > 0 || !bytes.Contains(lead, []byte("-")) {
		return 0 // n is a mapping's value, or the item's on its next line
	}
	want := []byte(strings.TrimSpace(c))
	for l := n.Line - 1; l >= 1; l-- {
		line := r.ix.line(l)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if item, ok := commentOn(line, want); ok && item {
			return l
		}
		return 0
	}
	return 0
}

// commentOn reports whether line holds the comment want (trimmed) and
// nothing else, or nothing but the dashes of empty list items (item).
func commentOn(line, want []byte) (item, ok bool) {
	t := bytes.TrimSpace(line)
	if !bytes.HasSuffix(t, want) {
		return false, false
	}
	rest := bytes.TrimSpace(t[:len(t)-len(want)])
	if len(rest) == 0 {
		return false, true
	}
	if len(bytes.Trim(rest, "- ")) > 0 || !bytes.HasSuffix(t[:len(t)-len(want)], []byte(" ")) {
		return false, false
	}
	return true, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// marker records a well-formed marker on the scalar value n and plans its
// edit.
func (r *rewriter) marker(n *yaml.Node, policy string, field Field, fromHead, inFlow bool) {
	r.out.markers = append(r.out.markers, Marker{
		File: r.file, Line: n.Line, Column: n.Column, Policy: policy, Field: field, Value: n.Value,
	})
	r.out.inFlow = append(r.out.inFlow, inFlow)
	if inFlow {
		r.staticProblem(n.Line, policy, errInFlow)
		return
	}
	if r.env.scanOnly {
		return
	}
	if !r.env.known(policy) {
		r.problem(n.Line, policy, &UnknownPolicyError{Policy: policy})
		return
	}
	img, ok := r.env.images[policy]
	if !ok {
		// The policy exists but resolved nothing; the caller reports that.
		return
	}
	v, err := newValue(img, policy, field)
	if err != nil {
		r.problem(n.Line, policy, err)
		return
	}
	if v == n.Value {
		return
	}
	switch {
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		r.problem(n.Line, policy, errBlock)
		return
	case n.Style&yaml.TaggedStyle != 0 && n.Tag != "!!str":
		r.problem(n.Line, policy, fmt.Errorf("the marked scalar has the explicit tag %s; only strings are rewritten", n.Tag))
		return
	case n.Value == "" && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0:
		r.problem(n.Line, policy, errEmpty)
		return
	}
	lc := n.LineComment
	if fromHead {
		lc = ""
	}
	sp, err := scalarSpan(r.ix, n, lc)
	if err != nil {
		r.problem(n.Line, policy, err)
		return
	}
	r.out.edits = append(r.out.edits, edit{
		span: sp,
		repl: render(v, n.Style),
		node: n,
		change: Change{
			File: r.file, Line: n.Line, Policy: policy, Field: field, Old: n.Value, New: v,
		},
	})
}

// ValueFor returns the value a marker of field, naming policy, would be
// given from img: what Apply would write there, or why it would not.
func ValueFor(img Image, policy string, field Field) (string, error) {
	return newValue(img, policy, field)
}

// newValue returns the value a marker of the given field takes from img.
func newValue(img Image, policy string, field Field) (string, error) {
	var v string
	switch field {
	case FieldImage:
		switch {
		case img.Repository == "":
			return "", fmt.Errorf("policy %s resolved no repository", policy)
		case img.Tag == "" && img.Digest == "":
			return "", fmt.Errorf("policy %s resolved no tag", policy)
		}
		v = img.Repository
		if img.Tag != "" {
			v += ":" + img.Tag
		}
		if img.Digest != "" {
			v += "@" + img.Digest
		}
	case FieldTag:
		if img.Tag == "" {
			return "", fmt.Errorf("policy %s resolved no tag", policy)
		}
		v = img.Tag
	case FieldName:
		if img.Repository == "" {
			return "", fmt.Errorf("policy %s resolved no repository", policy)
		}
		v = img.Repository
	case FieldDigest:
		if img.Digest == "" {
			return "", fmt.Errorf("policy %s resolved no digest; the old value stays: a :digest marker needs the policy to pin digests (digest: always or ifNotPresent in its config; the default is never)", policy)
		}
		v = img.Digest
	default:
		return "", fmt.Errorf("unknown field %q", field)
	}
	if err := checkValue(v); err != nil {
		return "", fmt.Errorf("policy %s resolved an unusable value: %w", policy, err)
	}
	return v, nil
}

// badByte finds the first byte YAML refuses in any position (a control
// character other than tab and the line breaks, or invalid UTF-8) and
// returns its line as yaml.v3 counts lines, with what it is; 0 when there
// is none.
func badByte(src []byte) (int, string) {
	ix := newLineIndex(src)
	for n := 1; n <= ix.lines(); n++ {
		line := ix.line(n)
		for i := 0; i < len(line); {
			c := line[i]
			if c < utf8.RuneSelf {
				if c < 0x20 && c != '\t' || c == 0x7f {
					if c == 0 {
						return n, "a NUL byte"
					}
					return n, fmt.Sprintf("the control character 0x%02x", c)
				}
				i++
				continue
			}
			r, size := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && size == 1 {
				return n, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
			}
			i += size
		}
	}
	return 0, ""
}
