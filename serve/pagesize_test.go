package serve

import (
	"bytes"
	"testing"
)

// maxIndexBytes bounds the index of fleetStatus(200).
const maxIndexBytes = 300_000

// TestStatusPageSize renders the status page of fleetStatus(200): the
// index must stay under maxIndexBytes. It logs the figures of
// docs/benchmarks.md ("Status page at 200 targets"):
//
//	go test -count=1 -run TestStatusPageSize -v ./serve
func TestStatusPageSize(t *testing.T) {
	st := fleetStatus(200)
	var buf bytes.Buffer
	if err := renderIndex(&buf, st); err != nil {
		t.Fatal(err)
	}
	index := buf.Len()
	t.Logf("GET / at 200 targets: %d bytes", index)
	if index > maxIndexBytes {
		t.Errorf("the index of 200 targets is %d bytes, over %d", index, maxIndexBytes)
	}
	largest := 0
	for _, ts := range st.Targets {
		buf.Reset()
		if err := renderTarget(&buf, st, ts); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, buf.Len())
	}
	t.Logf("GET /targets/NAME at 200 targets: at most %d bytes", largest)
	// The index as it would be with every target's details inline, as
	// the one page was before the targets had pages of their own.
	v := newIndexView(st)
	v.Inline = true
	buf.Reset()
	if err := pageTemplates().ExecuteTemplate(&buf, "index.html", v); err != nil {
		t.Fatal(err)
	}
	t.Logf("GET / at 200 targets with every target's details inline: %d bytes", buf.Len())
}

// BenchmarkStatusPage renders the index and a target's page of
// fleetStatus(200).
func BenchmarkStatusPage(b *testing.B) {
	st := fleetStatus(200)
	b.Run("index", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := renderIndex(&buf, st); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "page-bytes")
	})
	b.Run("target", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := renderTarget(&buf, st, st.Targets[0]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "page-bytes")
	})
}

// TestPagesParse: the page templates, parsed on the first page served,
// parse; a mistake in them fails here plainly rather than as a panic in
// a request.
func TestPagesParse(t *testing.T) {
	tpl, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "target.html"} {
		if tpl.Lookup(name) == nil {
			t.Errorf("no template %s", name)
		}
	}
}
