package commands

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// stdIndent is what encoding/json's own indenting encoder writes for v.
func stdIndent(t testing.TB, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEncodeJSON(t *testing.T) {
	type change struct {
		File  string `json:"file"`
		Line  int    `json:"line"`
		From  string `json:"from,omitempty"`
		Extra any    `json:"extra"`
	}
	for name, v := range map[string]any{
		"empty object":  map[string]any{},
		"empty array":   []int{},
		"nested empty":  map[string]any{"a": []int{}, "b": map[string]int{}, "c": [][]int{{}, {}}},
		"null":          nil,
		"scalars":       []any{1, -2.5e-10, true, false, nil, "x"},
		"brackets":      []string{"{", "}", "[", "]", ",", ":", `"`, `\`, `\"}`, "a\\", "a\\\\\"b"},
		"escapes":       []string{"tab\there", "new\nline", "\x01\x7f", "<&>", "\u2028\u2029", "é\xff"},
		"semver ranges": map[string]string{"policy": ">=1.0.0 <2.0.0"},
		"raw message":   map[string]any{"raw": json.RawMessage(` { "a" : [ ] , "b" : "x\\\"}" } `), "n": json.Number("1e3")},
		"structs": []change{
			{File: "a.yaml", Line: 3, From: "x:1", Extra: map[string]any{"k": []any{1, "2", map[string]any{}}}},
			{File: `we"ird\.yaml`, Line: 0},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			if err := encodeJSON(&got, v); err != nil {
				t.Fatal(err)
			}
			if want := stdIndent(t, v); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("encodeJSON wrote\n%s\nencoding/json writes\n%s", got.Bytes(), want)
			}
		})
	}
}

// FuzzIndentJSON checks indentJSON against json.Indent on any valid JSON,
// compacted first as encoding/json's encoder would write it.
func FuzzIndentJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"c\"]"}],"d":{}}`, `"\\"`, `[[],[{}],""]`, `null`, ` { "a" : [ 1 , 2 ] } `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(s)); err != nil {
			t.Fatal(err)
		}
		compact.WriteByte('\n')
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indentJSON(%q) =\n%s\njson.Indent gives\n%s", compact.Bytes(), got, want.Bytes())
		}
	})
}

// BenchmarkEncodeJSON compares encodeJSON with encoding/json's indenting
// encoder on a report-shaped value of 2,000 changes:
//
//	go test ./internal/commands -run '^$' -bench EncodeJSON
func BenchmarkEncodeJSON(b *testing.B) {
	type change struct {
		File   string `json:"file"`
		Line   int    `json:"line"`
		Policy string `json:"policy"`
		From   string `json:"from"`
		To     string `json:"to"`
	}
	v := make([]change, 2000)
	for i := range v {
		v[i] = change{File: "charts/svc/values.yaml", Line: i, Policy: "team:app", From: "registry.example.com/app:1.2.3", To: "registry.example.com/app:" + strings.Repeat("9", i%7)}
	}
	b.Run("encodeJSON", func(b *testing.B) {
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := encodeJSON(&buf, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-indent", func(b *testing.B) {
		for b.Loop() {
			stdIndent(b, v)
		}
	})
}

// TestJSONLogDurations: in JSON logs every duration is seconds, as the
// cycle records' are, where slog wrote integer nanoseconds.
func TestJSONLogDurations(t *testing.T) {
	var b bytes.Buffer
	log, err := newLogger(&b, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("push accepted", "duration", 1500*time.Millisecond, "grace", 30*time.Second, "files", 3)
	var rec map[string]any
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["duration"] != 1.5 || rec["grace"] != 30.0 || rec["files"] != 3.0 {
		t.Errorf("record %v: want duration 1.5 and grace 30 (seconds), files 3", rec)
	}
}
