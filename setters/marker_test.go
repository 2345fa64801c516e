package setters

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMarker(t *testing.T) {
	type result struct {
		Policy string
		Field  Field
		OK     bool
		Err    string // a fragment of the error, "" for none
	}
	for _, tc := range []struct {
		comment string
		want    result
	}{
		{`# {"$imagepolicy": "apps:app"}`, result{"apps:app", FieldImage, true, ""}},
		{`{"$imagepolicy": "apps:app"}`, result{"apps:app", FieldImage, true, ""}},
		{`#{"$imagepolicy":"apps:app"}`, result{"apps:app", FieldImage, true, ""}},
		{`##   {  "$imagepolicy" :  "apps:app:tag" }  `, result{"apps:app", FieldTag, true, ""}},
		{`# {"$imagepolicy": "apps:app:name"}`, result{"apps:app", FieldName, true, ""}},
		{`# {"$imagepolicy": "apps:app:digest"}`, result{"apps:app", FieldDigest, true, ""}},
		{`# {"$imagepolicy": "flux-system:podinfo", "note": "x"}`, result{"flux-system:podinfo", FieldImage, true, ""}},
		{"# {\"$imagepolicy\":\n\"a:b\"}", result{"a:b", FieldImage, true, ""}},
		{``, result{}},
		{`# just a comment`, result{}},
		{`# see the $imagepolicy docs`, result{}},
		{`# {"other": "x"}`, result{}},
		{`# {"$imagepolicy": "app"}`, result{"", "", true, `has no namespace`}},
		{`# {"$imagepolicy": "apps:app:version"}`, result{"", "", true, `unknown field "version"`}},
		{`# {"$imagepolicy": "a:b:c:d"}`, result{"", "", true, `too many parts`}},
		{`# {"$imagepolicy": ":app"}`, result{"", "", true, `empty part`}},
		{`# {"$imagepolicy": "apps:my app"}`, result{"", "", true, `white space`}},
		{`# {"$imagepolicy": "apps:app"`, result{"", "", true, `invalid JSON`}},
		{`# {"$imagepolicy": 1}`, result{"", "", true, `must be a string`}},
		{`# {"$imagepolicy": "a:b", "n": 1}`, result{"", "", true, `value of key "n" must be a string`}},
		{`# {"$imagepolicy": "a:b", "$imagepolicy": "a:c"}`, result{"", "", true, `duplicate key`}},
		{`# {"$ImagePolicy": "a:b"}`, result{"", "", true, `unknown key "$ImagePolicy"`}},
		{`# {"$imagepolicy": "a:b"} trailing`, result{"", "", true, `text after the JSON object: "trailing"; a marker comment holds the object alone`}},
		{`# {"$imagepolicy": "a:b"}{}`, result{"", "", true, `text after the JSON object: "{}"`}},
		{`# image {"$imagepolicy": "a:b"}`, result{"", "", true, `want a JSON object`}},
		{`# {"marker": "$imagepolicy"}`, result{"", "", true, `no "$imagepolicy" key`}},
		{`# ["$imagepolicy"]`, result{"", "", true, `want a JSON object`}},
	} {
		t.Run(tc.comment, func(t *testing.T) {
			policy, field, ok, err := ParseMarker(tc.comment)
			got := result{Policy: policy, Field: field, OK: ok}
			if err != nil {
				got.Err = tc.want.Err
				if !strings.Contains(err.Error(), tc.want.Err) || tc.want.Err == "" {
					got.Err = err.Error()
				}
				var me *MarkerError
				if !errors.As(err, &me) {
					t.Errorf("error %T is not a *MarkerError", err)
				}
			}
			if diff := cmp.Diff(got, tc.want); diff != "" {
				t.Errorf("ParseMarker(%q) (-got +want):\n%s", tc.comment, diff)
			}
		})
	}
}

func TestFormatMarker(t *testing.T) {
	for _, tc := range []struct {
		policy string
		field  Field
		want   string
	}{
		{"apps:app", FieldImage, `{"$imagepolicy": "apps:app"}`},
		{"apps:app", FieldTag, `{"$imagepolicy": "apps:app:tag"}`},
		{"apps:app", FieldName, `{"$imagepolicy": "apps:app:name"}`},
		{"apps:app", FieldDigest, `{"$imagepolicy": "apps:app:digest"}`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			got := FormatMarker(tc.policy, tc.field)
			if got != tc.want {
				t.Errorf("FormatMarker(%q, %q) = %s, want %s", tc.policy, tc.field, got, tc.want)
			}
			policy, field, ok, err := ParseMarker("# " + got)
			if policy != tc.policy || field != tc.field || !ok || err != nil {
				t.Errorf("ParseMarker(FormatMarker) = %q, %q, %v, %v", policy, field, ok, err)
			}
		})
	}
}

func FuzzParseMarker(f *testing.F) {
	for _, s := range []string{
		`# {"$imagepolicy": "apps:app"}`,
		`#{"$imagepolicy":"a:b:tag"}`,
		`# {"$imagepolicy": "a:b:digest", "x": "y"}`,
		`# {"$imagepolicy": "app"}`,
		`# {"$imagepolicy": "a:b:c:d"}`,
		`# {"$imagepolicy": "a\u00e9:b"}`,
		`# {"$imagepolicy" 1}`,
		`## {`,
		`# plain comment`,
		"# {\"$imagepolicy\": \"a:\\u0062\"}",
		"# {\"$imagepolicy\": \"a:\xffb\"}",
		"#{\t\"$imagepolicy\"\r\n:\"a:b\"\n}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, comment string) {
		checkSimpleMarker(t, markerText(comment))
		policy, field, ok, err := ParseMarker(comment)
		if !ok {
			if err != nil || policy != "" || field != "" {
				t.Fatalf("not a marker but got %q, %q, %v", policy, field, err)
			}
			return
		}
		if err != nil {
			if policy != "" || field != "" {
				t.Fatalf("error %v with a result %q, %q", err, policy, field)
			}
			return
		}
		ns, name, found := strings.Cut(policy, ":")
		if !found || ns == "" || name == "" || strings.Contains(name, ":") {
			t.Fatalf("policy %q is not NAMESPACE:NAME", policy)
		}
		again := FormatMarker(policy, field)
		p2, f2, ok2, err2 := ParseMarker("# " + again)
		if p2 != policy || f2 != field || !ok2 || err2 != nil {
			t.Fatalf("round trip of %q through %s: got %q, %q, %v, %v", comment, again, p2, f2, ok2, err2)
		}
	})
}

// checkSimpleMarker fails when simpleMarker accepts text and the JSON
// decoder reads it differently.
func checkSimpleMarker(t *testing.T, text string) {
	t.Helper()
	ref, ok := simpleMarker(text)
	if !ok {
		return
	}
	want, reason, err := decodeMarker(text)
	if reason != "" || want != ref {
		t.Fatalf("simpleMarker(%q) = %q; the decoder gives %q, %q, %v", text, ref, want, reason, err)
	}
}

// TestSimpleMarker checks which texts the fast path takes, and that it
// reads each as the decoder does.
func TestSimpleMarker(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
		fast bool // false when the decoder must read it
	}{
		{`{"$imagepolicy": "apps:app"}`, "apps:app", true},
		{`{"$imagepolicy":"a:b:tag"}`, "a:b:tag", true},
		{"{ \t\"$imagepolicy\"\r\n :\n \"a:b\" \t}", "a:b", true},
		{`{"$imagepolicy": "a:b é"}`, "a:b é", true},
		{`{"$imagepolicy": ""}`, "", true},
		{`{"$imagepolicy": "a:\u0062"}`, "", false},
		{`{"$imagepolicy": "a:\"b"}`, "", false},
		{"{\"$imagepolicy\": \"a:\xffb\"}", "", false},
		{"{\"$imagepolicy\": \"a:\x01b\"}", "", false},
		{`{"$imagepolicy": "a:b", "x": "y"}`, "", false},
		{`{"x": "y", "$imagepolicy": "a:b"}`, "", false},
		{`{"$imagepolicy": "a:b"}}`, "", false},
		{`{"$imagepolicy": "a:b"`, "", false},
		{`{"$imagepolicy": 1}`, "", false},
		{`{"$ImagePolicy": "a:b"}`, "", false},
		{"{\"$imagepolicy\"\u00a0: \"a:b\"}", "", false},
	} {
		t.Run(tc.text, func(t *testing.T) {
			ref, ok := simpleMarker(tc.text)
			if ok != tc.fast || ref != tc.want {
				t.Errorf("simpleMarker(%q) = %q, %v; want %q, %v", tc.text, ref, ok, tc.want, tc.fast)
			}
			checkSimpleMarker(t, tc.text)
		})
	}
}
