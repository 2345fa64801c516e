package registry

import "sync"

// resetMap is a bounded cache, safe for concurrent use, of values that
// never change for their key: once it holds max entries it starts afresh,
// which costs a few lookups again and no bookkeeping per use.
type resetMap[K comparable, V any] struct {
	mu  sync.Mutex
	m   map[K]V
	max int
}

func (r *resetMap[K, V]) get(k K) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[k]
	return v, ok
}

func (r *resetMap[K, V]) put(k K, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= r.max {
		r.m = map[K]V{}
	}
	r.m[k] = v
}

// len returns how many entries it holds.
func (r *resetMap[K, V]) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
