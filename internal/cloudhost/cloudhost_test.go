package cloudhost

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		host string
		want Host
	}{
		{"123456789012.dkr.ecr.eu-west-1.amazonaws.com", Host{Provider: AWS, Account: "123456789012", Region: "eu-west-1"}},
		{"123456789012.DKR.ECR.us-east-1.amazonaws.com:443", Host{Provider: AWS, Account: "123456789012", Region: "us-east-1"}},
		{"123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn", Host{Provider: AWS, Account: "123456789012", Region: "cn-north-1"}},
		{"123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com", Host{Provider: AWS, Account: "123456789012", Region: "us-gov-west-1", FIPS: true}},
		{"123456789012.dkr-ecr.eu-west-1.on.aws", Host{Provider: AWS, Account: "123456789012", Region: "eu-west-1"}},
		{"public.ecr.aws", Host{Provider: AWS, Public: true, Region: "us-east-1"}},
		{"12345678901.dkr.ecr.eu-west-1.amazonaws.com", Host{Provider: Generic}},
		{"123456789012.dkr.ecr.eu-west-1.amazonaws.com.evil.example", Host{Provider: Generic}},
		{"gcr.io", Host{Provider: GCP}},
		{"eu.gcr.io", Host{Provider: GCP}},
		{"europe-west1-docker.pkg.dev", Host{Provider: GCP}},
		{"notgcr.io", Host{Provider: Generic}},
		{"acme.azurecr.io", Host{Provider: Azure, Cloud: "public"}},
		{"acme.azurecr.cn", Host{Provider: Azure, Cloud: "china"}},
		{"acme.azurecr.us", Host{Provider: Azure, Cloud: "usgov"}},
		{"azurecr.io", Host{Provider: Generic}},
		{"ghcr.io", Host{Provider: Generic}},
		{"localhost:5000", Host{Provider: Generic}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if diff := cmp.Diff(Parse(tc.host), tc.want); diff != "" {
				t.Errorf("Parse(%q) (-got +want):\n%s", tc.host, diff)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct{ provider, host, want string }{
		{"", "gcr.io", Generic},
		{Generic, "gcr.io", Generic},
		{Auto, "gcr.io", GCP},
		{Auto, "ghcr.io", Generic},
		{Azure, "registry.example.com", Azure},
	} {
		if got := Resolve(tc.provider, tc.host); got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.provider, tc.host, got, tc.want)
		}
	}
}

// TestMismatch: each cloud's credentials go to its own registry host
// names only.
func TestMismatch(t *testing.T) {
	for _, tc := range []struct {
		provider, host string
		want           string // in the reason; "" for none
	}{
		{AWS, "123456789012.dkr.ecr.eu-west-1.amazonaws.com", ""},
		{AWS, "public.ecr.aws", ""},
		{AWS, "ghcr.io", "provider aws needs an ECR host name"},
		{GCP, "gcr.io", ""},
		{GCP, "eu.gcr.io:443", ""},
		{GCP, "europe-west1-docker.pkg.dev", ""},
		{GCP, "ghcr.io", `provider gcp needs a Google host name (gcr.io, *.gcr.io or *-docker.pkg.dev): the workload's Google token goes to Google's registries only; "ghcr.io" is not one`},
		{GCP, "localhost:5000", "provider gcp needs a Google host name"},
		{GCP, "gcr.io.evil.example", "provider gcp needs a Google host name"},
		{Azure, "fleet.azurecr.io", ""},
		{Azure, "fleet.azurecr.cn", ""},
		{Azure, "ghcr.io", `provider azure needs an ACR host name (*.azurecr.io, *.azurecr.cn or *.azurecr.us): the workload's Entra ID token goes to Azure's registries only; "ghcr.io" is not one`},
		{Azure, "azurecr.io.evil.example", "provider azure needs an ACR host name"},
		{Generic, "ghcr.io", ""},
		{Auto, "ghcr.io", ""},
		{"", "ghcr.io", ""},
		{GCP, "", ""},
	} {
		got := Mismatch(tc.provider, tc.host)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Mismatch(%q, %q) = %q, want %q", tc.provider, tc.host, got, tc.want)
		}
	}
}

// FuzzParse checks that what Parse reports is in the host name it was
// given: an account and region are parts of it, and only the providers'
// own domains are recognised.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"123456789012.dkr.ecr.eu-west-1.amazonaws.com", "public.ecr.aws", "gcr.io", "a.azurecr.cn", "x:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		h := Parse(host)
		lower := strings.ToLower(host)
		switch h.Provider {
		case AWS:
			if !h.Public && (len(h.Account) != 12 || h.Region == "" || !strings.HasPrefix(lower, h.Account+".dkr") || !strings.Contains(lower, "."+h.Region+".")) {
				t.Errorf("Parse(%q) = %+v", host, h)
			}
		case GCP:
			if !strings.Contains(lower, "gcr.io") && !strings.Contains(lower, ".pkg.dev") {
				t.Errorf("Parse(%q) = %+v", host, h)
			}
		case Azure:
			if !strings.Contains(lower, ".azurecr.") || h.Cloud == "" {
				t.Errorf("Parse(%q) = %+v", host, h)
			}
		case Generic:
		default:
			t.Errorf("Parse(%q) = unknown provider %q", host, h.Provider)
		}
	})
}
