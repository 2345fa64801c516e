package setters

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file adds markers where there are none: Insert puts a marker
// comment after a scalar value with the same byte-minimal splice and the
// same parse-and-compare proof as Apply's edits, and Walk and WriteFiles
// give callers (imagebump init) Apply's rules for reading and writing a
// tree.

// Insertion asks Insert for a marker comment on one scalar value.
type Insertion struct {
	// Line and Column locate the scalar as yaml.v3 (and kyaml) count them:
	// 1-based, the column in characters, at the scalar's anchor or tag
	// when it has one.
	Line, Column int
	// Value is the scalar's value; the scalar found there must hold it.
	Value string
	// Policy is the policy reference the marker names ("ns:name").
	Policy string
	// Field is the part of the image reference the scalar holds.
	Field Field
}

// InsertStatus says what became of one Insertion.
type InsertStatus int

// The statuses of an insertion.
const (
	// Inserted: the marker comment was added after the value.
	Inserted InsertStatus = iota + 1
	// Present: the value carries this very marker already.
	Present
	// Refused: the marker was not added; InsertResult.Err says why.
	Refused
)

// String returns "inserted", "present" or "refused".
func (s InsertStatus) String() string {
	switch s {
	case Inserted:
		return "inserted"
	case Present:
		return "present"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("InsertStatus(%d)", int(s))
}

// InsertResult is the outcome of one Insertion.
type InsertResult struct {
	Insertion
	Status InsertStatus
	// Err says why the marker was refused.
	Err error
}

// MarkedError reports a value that already carries a marker naming
// another policy or field. Insert leaves it alone.
type MarkedError struct {
	// Policy and Field are those of the marker already there.
	Policy string
	Field  Field
}

// Error implements error.
func (e *MarkedError) Error() string {
	return "the value is marked already with " + FormatMarker(e.Policy, e.Field) + "; it is left as it is"
}

// Reasons Insert refuses a marker.
var (
	errInsertKey     = errors.New("the scalar is a mapping key, not a value; only values are marked")
	errInsertFlow    = errors.New("the value is inside a flow collection ({...} or [...]), where markers are not applied; rewrite the collection in block style to mark it")
	errInsertBlock   = errors.New("the value is a block scalar (| or >); only single-line scalars can be marked")
	errInsertComment = errors.New("the value has a comment already, and a marker must be the whole line comment; move the comment to the line above, then mark the value")
	errInsertVerify  = errors.New("with the marker, the file would read differently (a comment would attach elsewhere); not added")
)

// Insert adds the marker comment `# {"$imagepolicy": "POLICY[:FIELD]"}`
// after each scalar value ins names and returns the new bytes, or src
// itself when no marker was added, with one result per insertion in the
// order given.
//
// Only bytes are added: a space and the marker after the value, or, after
// an empty comment ("#"), the marker object alone. Nothing is removed or
// moved. A value with a comment of its own, in a flow collection, in a
// block scalar or spanning lines is refused, as is one marked already for
// another policy; one that carries the same marker is Present (so running
// Insert again changes nothing).
//
// The result is verified as Apply's edits are: the new bytes are parsed
// again and must read as the old ones, every node in the same place with
// the same value, style and comments, but for the marked values, whose line
// comment is now the marker; then the markers are read back by Apply's own
// rules and must name the policies asked, on those values. An insertion
// that fails the proof is refused alone and the others are kept.
//
// The error is for a src that is not valid YAML (a *SyntaxError); nothing
// is inserted then.
func Insert(src []byte, ins []Insertion) ([]byte, []InsertResult, error) {
	docs, err := parseDocs(src)
	if err != nil {
		return nil, nil, err
	}
	ix := newLineIndex(src)
	scalars := indexScalars(docs)
	res := make([]InsertResult, len(ins))
	var planned []insertEdit
	byNode := map[*yaml.Node]int{} // planned edit of a node, by index in planned
	for i, in := range ins {
		res[i] = InsertResult{Insertion: in}
		ed, err := planInsert(ix, scalars, in)
		switch {
		case err != nil:
			res[i].Status, res[i].Err = Refused, err
		case ed == nil:
			res[i].Status = Present
		default:
			if j, dup := byNode[ed.node]; dup {
				if planned[j].text != ed.text {
					res[i].Status, res[i].Err = Refused, fmt.Errorf("another insertion marks the same value with %s", strings.TrimSpace(strings.TrimLeft(planned[j].text, " #")))
				} else {
					res[i].Status = Present
				}
				continue
			}
			ed.results = []int{i}
			byNode[ed.node] = len(planned)
			planned = append(planned, *ed)
			res[i].Status = Inserted
		}
	}
	if len(planned) == 0 {
		return src, res, nil
	}
	slices.SortFunc(planned, func(a, b insertEdit) int { return a.at - b.at })
	out, err := spliceVerified(src, docs, planned)
	if err == nil {
		return out, res, nil
	}
	// One insertion spoils the proof: keep those that pass alone.
	var good []insertEdit
	for _, ed := range planned {
		if _, err := spliceVerified(src, docs, []insertEdit{ed}); err != nil {
			for _, i := range ed.results {
				res[i].Status, res[i].Err = Refused, fmt.Errorf("%w: %v", errInsertVerify, err)
			}
			continue
		}
		good = append(good, ed)
	}
	if len(good) == 0 {
		return src, res, nil
	}
	out, err = spliceVerified(src, docs, good)
	if err != nil {
		// Each passes alone but not together; add none rather than guess.
		for _, ed := range good {
			for _, i := range ed.results {
				res[i].Status, res[i].Err = Refused, fmt.Errorf("%w: %v", errInsertVerify, err)
			}
		}
		return src, res, nil
	}
	return out, res, nil
}

// insertEdit adds text at offset at, after the scalar node.
type insertEdit struct {
	at      int
	text    string
	node    *yaml.Node
	comment string // the node's line comment once the text is in
	policy  string
	field   Field
	results []int // the InsertResults it serves
}

// scalarAt is a scalar node with where it sits.
type scalarAt struct {
	n      *yaml.Node
	value  bool // a value, not a mapping key
	inFlow bool // inside a flow collection
}

// indexScalars maps the position of every scalar in docs to it.
func indexScalars(docs []*yaml.Node) map[[2]int]scalarAt {
	out := map[[2]int]scalarAt{}
	var walk func(n *yaml.Node, value, inFlow bool)
	walk = func(n *yaml.Node, value, inFlow bool) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, true, false)
			}
		case yaml.MappingNode, yaml.SequenceNode:
			flow := inFlow || n.Style&yaml.FlowStyle != 0
			for i, c := range n.Content {
				walk(c, n.Kind == yaml.SequenceNode || i%2 == 1, flow)
			}
		case yaml.ScalarNode:
			out[[2]int{n.Line, n.Column}] = scalarAt{n: n, value: value, inFlow: inFlow}
		}
	}
	for _, d := range docs {
		walk(d, true, false)
	}
	return out
}

// planInsert works out the bytes one insertion adds, or returns nil when
// the value carries the marker already.
func planInsert(ix *lineIndex, scalars map[[2]int]scalarAt, in Insertion) (*insertEdit, error) {
	marker := FormatMarker(in.Policy, in.Field)
	if p, f, ok, err := ParseMarker(marker); !ok || err != nil || p != in.Policy || f != in.Field {
		return nil, fmt.Errorf("cannot mark the value for policy %q: not a NAMESPACE:NAME reference with a known field", in.Policy)
	}
	s, ok := scalars[[2]int{in.Line, in.Column}]
	if !ok || s.n.Value != in.Value {
		return nil, fmt.Errorf("no scalar %q at line %d, column %d", in.Value, in.Line, in.Column)
	}
	n := s.n
	switch {
	case !s.value:
		return nil, errInsertKey
	case s.inFlow:
		return nil, errInsertFlow
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return nil, errInsertBlock
	}
	// A marker there already, by Flux's rule: the line comment, or a
	// one-line head comment when there is no line comment.
	comment := n.LineComment
	if head := strings.TrimRight(n.HeadComment, "\n"); comment == "" && head != "" && !strings.Contains(head, "\n") {
		comment = head
	}
	if policy, field, ok, err := ParseMarker(comment); ok {
		switch {
		case err != nil:
			return nil, fmt.Errorf("the value carries a malformed marker, left as it is: %w", err)
		case policy == in.Policy && field == in.Field:
			return nil, nil
		default:
			return nil, &MarkedError{Policy: policy, Field: field}
		}
	}
	sp, err := scalarSpan(ix, n, n.LineComment)
	if err != nil {
		return nil, err
	}
	end := ix.ends[n.Line-1]
	rest := ix.src[sp.end:end]
	trimmed := bytes.TrimRight(rest, " \t")
	ed := &insertEdit{node: n, policy: in.Policy, field: in.Field}
	switch {
	case len(rest) == 0:
		// Nothing after the value: the marker goes right after it.
		ed.at, ed.text, ed.comment = sp.end, " # "+marker, "# "+marker
	case len(trimmed) == 0:
		// Only white space after the value: it separates the marker, at
		// the end of the line (yaml.v3 would count white space after a
		// comment as part of it).
		ed.at, ed.text, ed.comment = end, "# "+marker, "# "+marker
	case markerText(string(trimmed)) == "" && n.LineComment != "":
		// An empty comment ("#", "##"): the marker object completes it.
		c := bytes.TrimLeft(trimmed, " \t")
		ed.at, ed.text, ed.comment = sp.end+len(trimmed), " "+marker, string(c)+" "+marker
	default:
		return nil, errInsertComment
	}
	return ed, nil
}

// spliceVerified adds the edits (sorted by offset) to src and proves the
// result: it parses as the old tree, but for the marked nodes' line
// comments, and Apply's own reading finds each marker on its value.
func spliceVerified(src []byte, docs []*yaml.Node, eds []insertEdit) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(src) + 48*len(eds))
	prev := 0
	for _, ed := range eds {
		buf.Write(src[prev:ed.at])
		buf.WriteString(ed.text)
		prev = ed.at
	}
	buf.Write(src[prev:])
	out := buf.Bytes()

	newDocs, err := parseDocs(out)
	if err != nil {
		return nil, err
	}
	if len(newDocs) != len(docs) {
		return nil, fmt.Errorf("%d documents instead of %d", len(newDocs), len(docs))
	}
	// The old tree with the comments the markers must become compares
	// equal, by Apply's own comparison, to the new one.
	saved := make([]string, len(eds))
	for i, ed := range eds {
		saved[i] = ed.node.LineComment
		ed.node.LineComment = ed.comment
	}
	defer func() {
		for i, ed := range eds {
			ed.node.LineComment = saved[i]
		}
	}()
	for i := range docs {
		if err := sameNode(docs[i], newDocs[i], nil, nil); err != nil {
			return nil, err
		}
	}
	// Apply (and so validate) reads each marker where it was put.
	got := rewriteLines("", out, env{known: func(string) bool { return true }})
	for _, p := range got.problems {
		for _, ed := range eds {
			if p.Line == ed.node.Line {
				return nil, fmt.Errorf("line %d: %v", p.Line, p.Err)
			}
		}
	}
	for _, ed := range eds {
		found := false
		for _, m := range got.markers {
			if m.Line == ed.node.Line && m.Column == ed.node.Column && m.Policy == ed.policy && m.Field == ed.field {
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("line %d: the marker is not read back on the value", ed.node.Line)
		}
	}
	return out, nil
}

// EditorLine converts a line number as yaml.v3 counts it in src to the one
// an editor shows; they differ only in files with a lone CR or a Unicode
// line break.
func EditorLine(src []byte, line int) int {
	return newLineIndex(src).editorLine(line)
}

// Walk calls fn with the name (relative to opts.Root, slash-separated) and
// bytes of every file Apply would read under opts.Root, or opts.Paths,
// whether or not it holds a marker: regular files named *.yaml, *.yml or
// Kustomization, found by Apply's rules (symlinks that leave the root are
// not followed, .git is never entered, a file reached by several paths is
// read once, under its real name). Files are visited one at a time, in no
// set order; src is only valid during the call.
//
// Files that cannot be read, or are over the size limit, are returned as
// Problems and skipped. Only Root, Paths, MaxFileSize and Logger are read
// from opts. An error from fn ends the walk and is returned.
func Walk(ctx context.Context, opts Options, fn func(file string, src []byte) error) ([]Problem, error) {
	log := loggerOf(opts)
	root, err := resolveRoot(opts.Root)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{opts: Options{Root: opts.Root, Paths: opts.Paths, MaxFileSize: opts.MaxFileSize}, log: log, root: root, res: &Result{}}
	jobs := make(chan job, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(jobs)
		w := &walker{ctx: ctx, root: root, jobs: jobs, log: log, run: r}
		w.walk(opts.Paths)
	}()
	var buf bytes.Buffer
	var fnErr error
	for j := range jobs {
		if fnErr != nil || ctx.Err() != nil {
			continue // drain
		}
		err := readFile(j.abs, &buf, maxFileSize(opts))
		var tooLarge *TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			r.problem(Problem{File: j.rel, Err: fmt.Errorf("the file is %s, over the limit of %s; not read (raise maxFileSize in imagebump.yaml to read it)", byteSize(tooLarge.Size), byteSize(tooLarge.Limit))})
			continue
		case err != nil:
			r.problem(Problem{File: j.rel, Err: fmt.Errorf("reading file: %w", err)})
			continue
		}
		if err := fn(j.rel, buf.Bytes()); err != nil {
			fnErr = err
			cancel()
		}
	}
	<-done
	if fnErr != nil {
		return nil, fnErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("scanning %s: %w", opts.Root, err)
	}
	r.sort()
	return r.res.Problems, nil
}

// FileEdit is the new content of one file, for WriteFiles.
type FileEdit struct {
	// File is relative to the root, slash-separated.
	File string
	// Before is the content the edit was computed from; the file must
	// still hold it. Nil means the file is new and must not exist.
	Before []byte
	// After is the new content.
	After []byte
}

// NewFileMode is the mode WriteFiles gives a file it creates.
const NewFileMode fs.FileMode = 0o644

// WriteFiles writes the edits under root as Apply writes its files: each
// to a temporary file in its folder with the original's mode (NewFileMode
// for a new file), all made durable together, then each renamed over its
// original if that still holds Before. A path that leaves root, goes
// through .git, or names anything but a regular file (or, for a new file,
// anything at all) is refused. Nothing is written when ctx ends before the
// renames begin.
//
// Trouble with single files is returned as Problems, and the other files
// are still written; the error is for a bad root or a cancelled ctx.
func WriteFiles(ctx context.Context, root string, edits []FileEdit) ([]Problem, error) {
	real, err := resolveRoot(root)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	var files []*staged
	defer func() {
		for _, s := range files {
			s.discard()
		}
	}()
	for _, ed := range edits {
		abs, err := pathInRoot(real, ed.File)
		if err == nil {
			var s *staged
			if ed.Before == nil {
				s, err = stageNew(abs, ed.After)
			} else {
				s, err = stage(abs, ed.Before, ed.After, true)
			}
			if err == nil {
				s.rel = ed.File
				files = append(files, s)
				continue
			}
		}
		problems = append(problems, Problem{File: ed.File, Err: &WriteError{Err: err}})
	}
	if len(files) == 0 {
		return problems, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("writing in %s: %w", root, err)
	}
	if err := syncStaged(files); err != nil {
		for _, s := range files {
			problems = append(problems, Problem{File: s.rel, Err: &WriteError{Err: err}})
		}
		return problems, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("writing in %s: %w", root, err)
	}
	var buf bytes.Buffer
	for _, s := range files {
		if s.size < 0 {
			s.err = s.commitNew()
		} else {
			s.err = s.commit(&buf)
		}
		if s.err != nil {
			problems = append(problems, Problem{File: s.rel, Err: &WriteError{Err: s.err}})
		}
	}
	_ = syncRenamed(files) // as in Apply: not every file system can
	slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.File, b.File) })
	return problems, nil
}

// pathInRoot returns the absolute path of the root-relative rel, whose
// folders must be real folders inside root (symlinks among them may not
// lead out), outside .git.
func pathInRoot(root, rel string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if rel == "" || filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", errPathOut
	}
	if inGit(filepath.ToSlash(clean)) {
		return "", errPathGit
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(root, filepath.Dir(clean)))
	if err != nil {
		return "", err
	}
	if !within(dir, root) {
		return "", errPathOut
	}
	abs := filepath.Join(dir, filepath.Base(clean))
	if inGit(filepath.ToSlash(strings.TrimPrefix(abs, root))) {
		return "", errPathGit
	}
	return abs, nil
}

// stageNew writes data to a temporary file next to abs, which must not
// exist, for commitNew to rename.
func stageNew(abs string, data []byte) (*staged, error) {
	if _, err := os.Lstat(abs); err == nil {
		return nil, fmt.Errorf("%s exists already; not overwritten", filepath.Base(abs))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	dir, base := filepath.Split(abs)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := writeTemp(dir, base, NewFileMode, owner{uid: -1, gid: -1, links: 1}, data, syncEachFile)
	if err != nil {
		return nil, err
	}
	return &staged{abs: abs, tmp: tmp, dev: devOf(fi), size: -1}, nil
}

// commitNew renames a new file's temporary file into place, unless a file
// appeared there meanwhile.
func (s *staged) commitNew() error {
	if _, err := os.Lstat(s.abs); err == nil {
		s.discard()
		return fmt.Errorf("%s appeared while it was being written; not overwritten", filepath.Base(s.abs))
	}
	if err := os.Rename(s.tmp, s.abs); err != nil {
		s.discard()
		return err
	}
	s.tmp = ""
	return nil
}
