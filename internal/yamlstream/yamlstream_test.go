package yamlstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Doc
	}{
		{"empty", "", nil},
		{"one", "a: 1\n", []Doc{{"a: 1\n", 1}}},
		{"leading separator", "---\na: 1\n", []Doc{{"---\na: 1\n", 1}}},
		{"two", "a: 1\n---\nb: 2\n", []Doc{{"a: 1\n", 1}, {"b: 2\n", 3}}},
		{"comment after separator", "a: 1\n--- # two\n\nb: 2\n", []Doc{{"a: 1\n", 1}, {"\nb: 2\n", 3}}},
		{"crlf", "a: 1\r\n---\r\nb: 2\r\n", []Doc{{"a: 1\n", 1}, {"b: 2\n", 3}}},
		// As in kyaml, the second of two adjacent separators stays in the
		// next document, which YAML reads as its start marker.
		{"adjacent separators", "a: 1\n---\n---\nb: 2", []Doc{{"a: 1\n", 1}, {"---\nb: 2", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Split (-got +want):\n%s", diff)
			}
		})
	}
}

func TestSplitBadSeparator(t *testing.T) {
	_, err := Split([]byte("a: 1\n\n--- b: 2\n"))
	if err == nil || err.Error() != `line 3: invalid document separator "--- b: 2"` {
		t.Fatalf("err = %v", err)
	}
}
