//go:build unix && !linux && !darwin

package setters

import "syscall"

// keyOfStat returns a weak stat key; see keyOf.
func keyOfStat(*syscall.Stat_t) statKey { return statKey{weak: true} }
