package policy

import (
	"errors"
	"strings"
)

// Alphabetical orders values byte-wise, as Flux does: in "asc" order the
// last value wins ("b" over "a"), in "desc" order the first.
type Alphabetical struct {
	desc bool
}

var _ Policer = (*Alphabetical)(nil)

// NewAlphabetical returns an Alphabetical policy; order is "asc" or "desc".
// Any other order is a *SpecError.
func NewAlphabetical(order string) (*Alphabetical, error) {
	desc, err := parseOrder("alphabetical", order)
	if err != nil {
		return nil, err
	}
	return &Alphabetical{desc: desc}, nil
}

// Latest returns the last of values in the policy's order.
func (p *Alphabetical) Latest(values []string) (string, error) { return latestOf(p, values) }

func (p *Alphabetical) newRanker() ranker { return &alphabeticalRanker{desc: p.desc} }

type alphabeticalRanker struct {
	desc      bool
	found     bool
	best, tag string
}

func (r *alphabeticalRanker) offer(tag, value string) skip {
	c := strings.Compare(value, r.best)
	if r.desc {
		c = -c
	}
	if !r.found || wins(c, tag, r.tag) {
		r.found, r.best, r.tag = true, value, tag
	}
	return skipNone
}

func (r *alphabeticalRanker) latest() (string, bool) { return r.tag, r.found }

// parseOrder reads the order of an alphabetical or numerical policy (field)
// and reports whether it is "desc".
func parseOrder(field, order string) (desc bool, err error) {
	switch order {
	case "asc":
		return false, nil
	case "desc":
		return true, nil
	}
	return false, &SpecError{Field: field, Value: order, Err: errors.New(`must be "asc" or "desc"`), what: "order"}
}
