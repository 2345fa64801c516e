package serve

import (
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
)

// Shard is one replica's share of the targets when several `serve`
// processes run one config: the replica with Index owns the targets whose
// name hashes to Index (ShardOf). The zero Shard is no sharding: it owns
// every target.
type Shard struct {
	// Index is this replica's shard, in [0, Count).
	Index int
	// Count is the number of shards (replicas); zero means no sharding.
	Count int
}

// ShardOf returns the shard in [0, n) of the target called name: the
// 32-bit FNV-1a hash of the name, modulo n. It depends on nothing but the
// name and n, so every replica computes the same owner with no
// coordination; and it must never change, or an upgrade would move
// targets between replicas (shard_test.go pins it).
func ShardOf(name string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

// Owns reports whether the replica runs the target called name.
func (s Shard) Owns(name string) bool {
	return s.Count <= 1 || ShardOf(name, s.Count) == s.Index
}

// Sharded reports whether s splits the targets.
func (s Shard) Sharded() bool { return s.Count > 0 }

// String returns "I/N", or "" for no sharding.
func (s Shard) String() string {
	if !s.Sharded() {
		return ""
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

func (s Shard) check() error {
	if s.Count < 0 || (s.Count > 0 && (s.Index < 0 || s.Index >= s.Count)) || (s.Count == 0 && s.Index != 0) {
		return fmt.Errorf("shard %d/%d: the index must be in [0, %d)", s.Index, s.Count, max(s.Count, 1))
	}
	return nil
}

// ordinalRE finds the ordinal a StatefulSet puts at the end of its pods'
// names (imagebump-2).
var ordinalRE = regexp.MustCompile(`-([0-9]+)$`)

// ErrNoOrdinal is ParseShard's error for auto/N when the host name ends
// in no ordinal.
var ErrNoOrdinal = errors.New("the host name ends in no -ORDINAL")

// ParseShard reads the value of --shard: "I/N" (this replica owns shard I
// of N), or "auto/N", which takes I from the ordinal at the end of
// hostname, as a StatefulSet names its pods (imagebump-2 is shard 2), so
// that every replica runs with the same arguments. hostname is read only
// for auto.
func ParseShard(spec, hostname string) (Shard, error) {
	is, ns, ok := strings.Cut(spec, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want I/N (such as 0/3) or auto/N", spec)
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return Shard{}, fmt.Errorf("shard %q: N must be a whole number of 1 or more", spec)
	}
	var i int
	if is == "auto" {
		m := ordinalRE.FindStringSubmatch(hostname)
		if m == nil {
			return Shard{}, fmt.Errorf("shard %q: host name %q: %w (a StatefulSet's pods are NAME-0, NAME-1...; elsewhere give I/N)", spec, hostname, ErrNoOrdinal)
		}
		if i, err = strconv.Atoi(m[1]); err != nil || i >= n {
			return Shard{}, fmt.Errorf("shard %q: host name %q has ordinal %s, not below %d: scale the StatefulSet's replicas and N together", spec, hostname, m[1], n)
		}
		return Shard{Index: i, Count: n}, nil
	}
	if i, err = strconv.Atoi(is); err != nil || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: I must be a whole number from 0 to %d", spec, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}
