package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/imagebump/imagebump/cycle"
	"github.com/imagebump/imagebump/registry"
	"github.com/imagebump/imagebump/setters"
)

// scrape GETs /metrics from h and parses the exposition format.
func scrape(t testing.TB, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	return parseMetrics(t, rec.Body)
}

func parseMetrics(t testing.TB, body interface{ Read([]byte) (int, error) }) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// metricValue returns the value of the family's series whose labels
// include all of labels (name, value pairs), summed over matches, and
// whether any matched. Histograms give their sample count.
func metricValue(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := families[name]
	if fam == nil {
		return 0, false
	}
	var sum float64
	found := false
outer:
	for _, m := range fam.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue outer
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum, found
}

// counterValue scrapes s and returns one series' value.
func counterValue(t testing.TB, s *Server, name string, labels ...string) float64 {
	t.Helper()
	v, _ := metricValue(scrape(t, s.Handler()), name, labels...)
	return v
}

// TestRegistryRequestMetrics drives the real registry client with serve's
// hooks: each request is counted by host and status code, 429s also as
// throttled, failures without a response as code "error", and waits for
// a host's rate limit are counted.
func TestRegistryRequestMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.HasPrefix(r.URL.Path, "/v2/busy/"):
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"name":"app","tags":["1.0.0"]}`)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	down := refusedPort(t)
	m := newMetrics()
	client, err := registry.New(registry.Options{
		Hosts: []registry.Host{
			{Host: host, Insecure: true, RequestsPerSecond: 2, Burst: 1},
			{Host: down, Insecure: true},
		},
		MaxRetries: registry.NoRetries,
		OnRequest:  m.request,
		OnWait:     m.rateLimitWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, repo := range []string{host + "/app", host + "/app", host + "/busy"} {
		_, _ = client.Tags(ctx, repo)
	}
	if _, err := client.Tags(ctx, down+"/app"); err == nil {
		t.Fatal("listing a closed port succeeded")
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fams := parseMetrics(t, rec.Body)
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"imagebump_registry_requests_total", []string{"host", host, "code", "200"}, 3}, // a ping and two listings
		{"imagebump_registry_requests_total", []string{"host", host, "code", "429"}, 1},
		{"imagebump_registry_throttled_total", []string{"host", host}, 1},
		{"imagebump_registry_requests_total", []string{"host", down, "code", "error"}, 1},
		{"imagebump_registry_rate_limit_waits_total", []string{"host", host}, 1},
	} {
		if got, _ := metricValue(fams, c.name, c.labels...); got < c.min {
			t.Errorf("%s%v = %v, want at least %v", c.name, c.labels, got, c.min)
		}
	}
	// The ping's HTTPS try of an insecure host that answers plain HTTP is
	// no failure: an alert on code="error" would fire at each start.
	if got, _ := metricValue(fams, "imagebump_registry_requests_total", "host", host, "code", "error"); got != 0 {
		t.Errorf("imagebump_registry_requests_total{host=%q,code=\"error\"} = %v, want 0", host, got)
	}
}

// TestClassify checks which cycles count as failed and which a retry may
// fix.
func TestClassify(t *testing.T) {
	failedPolicy := &cycle.Report{Policies: []cycle.PolicyResult{{Name: "default:app", Err: errors.New("registry down")}}}
	badFile := &cycle.Report{Problems: []setters.Problem{{File: "a.yaml", Err: errors.New("invalid YAML")}}}
	tests := []struct {
		name      string
		res       *cycle.TargetResult
		err       error
		abandoned bool
		want      outcome
	}{
		{"success", &cycle.TargetResult{Report: &cycle.Report{}}, nil, false, outcome{result: ResultSuccess}},
		{"target failed", &cycle.TargetResult{}, errors.New("push refused"), false, outcome{result: ResultError, retry: true}},
		{"a policy failed", &cycle.TargetResult{Report: failedPolicy}, nil, false, outcome{result: ResultPartial, retry: true}},
		{"only a file failed", &cycle.TargetResult{Report: badFile}, nil, false, outcome{result: ResultPartial}},
		{"cancelled at stop", &cycle.TargetResult{}, context.Canceled, true, outcome{result: ResultAbandoned}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.res, tt.err, tt.abandoned); got != tt.want {
				t.Errorf("classify = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestMetricsDocumented checks that docs/serve.md lists every metric serve
// registers, so that the list cannot fall behind.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "serve.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	for _, c := range newMetrics().own {
		ch := make(chan *prometheus.Desc, 10)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]
			names++
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("docs/serve.md does not list %s", name)
			}
		}
	}
	if names < 15 {
		t.Errorf("found %d metrics; the test reads the struct wrong", names)
	}
}
