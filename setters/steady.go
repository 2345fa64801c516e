package setters

import (
	"maps"
	"slices"
)

// The steady view.
//
// Most cycles of serve find nothing new: no file changed and every
// policy still picks the value its markers hold. Serving each file from
// the index then still costs a few map lookups per marker, and a fleet
// has thousands of markers. The steady view groups the index's markers
// by policy and field, with the values they hold: while the index does
// not change, a cycle checks each policy and field once, and hands out
// the markers and problems the view already lists.

// steadyView is what Apply serves from an Index when no marker moves. It
// is made from the index's entries by view and never changed after.
type steadyView struct {
	// ready is false when an entry with the token was never parsed: its
	// markers are not known until the file is read.
	ready bool
	// markers and problems are every parsed entry's, files in path order,
	// as serving each file lists them; files counts those with markers.
	markers  []Marker
	problems []Problem
	files    int
	// checks are the policies and fields that markers outside flow
	// mappings name.
	checks []valueCheck
}

// valueCheck is one policy and field, the value the markers naming it
// hold, and which markers they are.
type valueCheck struct {
	key   valueKey
	value string
	// mixed is set when the markers hold more than one value: some of
	// them move whatever the policy picks.
	mixed bool
	// at are the markers', as indexes into steadyView.markers.
	at []int32
}

// set and drop change the entry of one file. Every change to files goes
// through them, or makes a new map and drops what is made from it.
func (ix *Index) set(rel string, e *fileEntry) {
	ix.ownFiles()
	ix.files[rel] = e
	ix.steady, ix.refs, ix.quiet = nil, nil, false
}

func (ix *Index) drop(rel string) {
	if _, ok := ix.files[rel]; !ok {
		return
	}
	ix.ownFiles()
	delete(ix.files, rel)
	ix.steady, ix.refs, ix.quiet = nil, nil, false
}

// ownFiles copies files when a Clone shares it, before a change.
func (ix *Index) ownFiles() {
	if ix.filesShared {
		ix.files, ix.filesShared = maps.Clone(ix.files), false
	}
}

// References returns the policies the indexed marker comments name, as
// Referenced would count them. Call it after Scan.
func (ix *Index) References() References {
	if ix.refs == nil {
		// Counted alone: a cycle starts the tag listings with it, and
		// the view need not be made before they end.
		ix.refs = References{}
		for _, e := range ix.files {
			for _, p := range e.refs {
				ix.refs[p]++
			}
		}
	}
	return maps.Clone(ix.refs)
}

// view returns the steady view of the index's entries, made now if the
// entries changed since it was last made.
func (ix *Index) view() *steadyView {
	if ix.steady != nil {
		return ix.steady
	}
	v := &steadyView{ready: true}
	paths := ix.paths()
	n := 0
	for _, rel := range paths {
		if e := ix.files[rel]; e.token {
			n += len(e.markers)
		}
	}
	if n > 0 {
		v.markers = make([]Marker, 0, n)
	}
	at := map[valueKey]int{}
	for _, rel := range paths {
		e := ix.files[rel]
		if !e.token {
			continue
		}
		if !e.parsed {
			v.ready = false
			continue
		}
		for _, m := range e.markers {
			v.markers = append(v.markers, m.marker(rel))
			if m.inFlow {
				continue
			}
			k := valueKey{m.policy, m.field}
			i, ok := at[k]
			if !ok {
				i = len(v.checks)
				at[k] = i
				v.checks = append(v.checks, valueCheck{key: k, value: m.value})
			}
			c := &v.checks[i]
			c.mixed = c.mixed || c.value != m.value
			c.at = append(c.at, int32(len(v.markers)-1))
		}
		for _, p := range e.problems {
			v.problems = append(v.problems, Problem{File: rel, Line: p.line, Policy: p.policy, Err: p.err})
		}
		if len(e.markers) > 0 {
			v.files++
		}
	}
	v.markers = slices.Clip(v.markers)
	ix.steady = v
	return v
}

// served adds to res what serving every file of the index would, when
// no marker's value would change under env, and reports whether it did:
// false when a marker moves or a file must be read, and res is left as
// it was. The markers res gets are the view's own, clipped, so that an
// append copies them: they must not be changed in place.
func (v *steadyView) served(env env, res *Result) bool {
	if !v.ready {
		return false
	}
	np := len(res.Problems)
	for _, c := range v.checks {
		policy := c.key.policy
		if !env.known(policy) {
			for _, i := range c.at {
				m := &v.markers[i]
				res.Problems = append(res.Problems, Problem{File: m.File, Line: m.Line, Policy: policy, Err: &UnknownPolicyError{Policy: policy}})
			}
			continue
		}
		img, ok := env.images[policy]
		if !ok {
			continue
		}
		value, err := newValue(img, policy, c.key.field)
		if err != nil {
			for _, i := range c.at {
				m := &v.markers[i]
				res.Problems = append(res.Problems, Problem{File: m.File, Line: m.Line, Policy: policy, Err: err})
			}
			continue
		}
		if c.mixed || c.value != value {
			res.Problems = res.Problems[:np]
			return false
		}
	}
	if len(res.Markers) == 0 {
		res.Markers = v.markers
	} else {
		res.Markers = append(res.Markers, v.markers...)
	}
	res.Problems = append(res.Problems, v.problems...)
	res.FilesWithMarkers += v.files
	return true
}
