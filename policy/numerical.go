package policy

import (
	"cmp"
	"math"
	"strconv"
)

// Numerical orders values as numbers, read by strconv.ParseFloat, as Flux
// does: in "asc" order the highest number wins, in "desc" order the lowest.
//
// Unlike Flux, which fails on the first value that is not a number, it
// skips values that are not numbers ("latest") or not finite ("NaN",
// "Inf", "1e400"); Policy.Select lists them in a warning.
type Numerical struct {
	desc bool
}

var _ Policer = (*Numerical)(nil)

// NewNumerical returns a Numerical policy; order is "asc" or "desc". Any
// other order is a *SpecError.
func NewNumerical(order string) (*Numerical, error) {
	desc, err := parseOrder("numerical", order)
	if err != nil {
		return nil, err
	}
	return &Numerical{desc: desc}, nil
}

// Latest returns the last of values in the policy's order.
func (p *Numerical) Latest(values []string) (string, error) { return latestOf(p, values) }

func (p *Numerical) newRanker() ranker { return &numericalRanker{desc: p.desc} }

type numericalRanker struct {
	desc  bool
	found bool
	best  float64
	tag   string
}

func (r *numericalRanker) offer(tag, value string) skip {
	f, err := strconv.ParseFloat(value, 64)
	switch {
	case err != nil && err.(*strconv.NumError).Err != strconv.ErrRange:
		return skipNotNumber
	case err != nil, math.IsNaN(f), math.IsInf(f, 0):
		return skipNotFinite
	}
	c := cmp.Compare(f, r.best)
	if r.desc {
		c = -c
	}
	if !r.found || wins(c, tag, r.tag) {
		r.found, r.best, r.tag = true, f, tag
	}
	return skipNone
}

func (r *numericalRanker) latest() (string, bool) { return r.tag, r.found }
