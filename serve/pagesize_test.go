package serve

import (
	"bytes"
	"testing"
)

// TestStatusPageSize renders the status page of fleetStatus(200), the
// figure of docs/benchmarks.md ("Status page at 200 targets"):
//
//	go test -count=1 -run TestStatusPageSize -v ./serve
func TestStatusPageSize(t *testing.T) {
	var buf bytes.Buffer
	if err := renderPage(&buf, fleetStatus(200)); err != nil {
		t.Fatal(err)
	}
	t.Logf("GET / at 200 targets: %d bytes", buf.Len())
}
