// Package testregistry starts real OCI registries on loopback for tests: the
// CNCF distribution registry 2.8.2 from Debian's docker-registry package, and
// distribution v3 (which paginates tag lists), each with its own config,
// optionally with htpasswd basic auth, TLS from a generated CA, or a
// bearer-token realm.
//
// The registries are the real binaries, run as child processes with their
// storage in t.TempDir() (or in memory) and stopped by t.Cleanup. When a binary (or the
// htpasswd tool) is missing, Start fails the test if CI=true and skips it
// otherwise, with a message saying how to install it.
package testregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagebump/imagebump/internal/testkit/ci"

	"gopkg.in/yaml.v3"
)

// Version selects which registry implementation Start runs.
type Version int

const (
	// V2 is Debian's /usr/bin/docker-registry 2.8.2. It ignores ?n= on tag
	// lists and never paginates.
	V2 Version = iota
	// V3 is distribution v3.1.2 (the `registry` binary). It caps tag list
	// pages at 1000 and sends Link headers when asked for ?n=.
	V3
)

// String returns "v2" or "v3".
func (v Version) String() string {
	switch v {
	case V2:
		return "v2"
	case V3:
		return "v3"
	}
	return "Version(" + strconv.Itoa(int(v)) + ")"
}

// Options selects the registry version and how clients must reach it.
// Htpasswd and Token are exclusive: a registry has one auth provider.
type Options struct {
	// Version is the registry implementation; the zero value is V2.
	Version Version
	// Htpasswd turns on basic auth with a generated username and password.
	Htpasswd bool
	// TLS serves HTTPS with a certificate from a CA generated for the test.
	TLS bool
	// Token turns on bearer-token auth: a token server started in-process
	// on "localhost" (go-containerregistry refuses a realm on 127.0.0.1)
	// exchanges the generated username and password for tokens.
	Token bool
	// InMemory keeps the registry's storage in its memory (distribution's
	// inmemory driver) instead of a filesystem root in t.TempDir(). The
	// filesystem driver syncs every file it writes, so pushing thousands of
	// tags is several times faster in memory; nothing else differs.
	InMemory bool
	// Notify, when set, makes the registry send its event notifications
	// (distribution's envelope of push, pull and delete events) to an
	// endpoint, as a registry's notifications.endpoints does.
	Notify *Notify
}

// Notify is a notification endpoint of the registry.
type Notify struct {
	// URL receives the events (POST).
	URL string
	// Headers are sent with each request, such as an Authorization.
	Headers map[string][]string
}

// Server is a running registry.
type Server struct {
	// Host is "127.0.0.1:PORT" ("localhost:PORT" when Token).
	Host string
	// Username is set with Htpasswd or Token.
	Username string
	// Password is set with Htpasswd or Token.
	Password string
	// CAFile is the PEM file of the test CA, with TLS.
	CAFile string
	// CertPool holds the test CA, with TLS.
	CertPool *x509.CertPool
	// Transport trusts the test CA with TLS; otherwise it is a plain clone
	// of http.DefaultTransport.
	Transport http.RoundTripper

	// URL is the base URL: "http://" or "https://" and Host.
	URL string
	// Version is the registry implementation that is running.
	Version Version
	// Realm is the token server's URL, with Token.
	Realm string
	// LogFile is the registry's log (its stdout and stderr).
	LogFile string
}

// Repo returns the reference of the repository path on s: Host + "/" + path.
func (s *Server) Repo(path string) string {
	return s.Host + "/" + path
}

// Environment variables naming the registry binaries.
const (
	envV2 = "IMAGEBUMP_DOCKER_REGISTRY"
	envV3 = "IMAGEBUMP_REGISTRY_V3"
)

const (
	defaultV2Binary = "/usr/bin/docker-registry"
	// readyTimeout bounds how long Start waits for GET /v2/ to answer.
	readyTimeout = 20 * time.Second
	// startAttempts bounds restarts after another process took the port
	// between picking it and the registry binding it.
	startAttempts = 3
	// v3MaxTags is distribution v3's cap on a tag list page, written into
	// its config explicitly so the limit tests rely on is visible here.
	v3MaxTags = 1000
)

// missingError reports a tool the tests need that is not installed; its
// text says how to install it.
type missingError struct {
	tool string
	hint string
}

func (e *missingError) Error() string {
	return e.tool + " not found; " + e.hint
}

// binary returns the path of the registry binary for v.
func binary(v Version) (string, error) {
	switch v {
	case V2:
		path := defaultV2Binary
		if env := os.Getenv(envV2); env != "" {
			path = env
		}
		if err := executable(path); err != nil {
			return "", &missingError{
				tool: "docker-registry 2.8.2 (" + path + ")",
				hint: "install it with `apt-get install docker-registry`, or set " + envV2 + " to its path",
			}
		}
		return path, nil
	case V3:
		hint := "build it with `GOBIN=$HOME/.cache/imagebump-tools/bin go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2`, or set " + envV3 + " to its path"
		if env := os.Getenv(envV3); env != "" {
			if err := executable(env); err != nil {
				return "", &missingError{tool: "distribution v3 registry (" + env + ")", hint: hint}
			}
			return env, nil
		}
		if home, err := os.UserHomeDir(); err == nil {
			path := filepath.Join(home, ".cache", "imagebump-tools", "bin", "registry")
			if executable(path) == nil {
				return path, nil
			}
		}
		if path, err := exec.LookPath("registry"); err == nil {
			return path, nil
		}
		return "", &missingError{tool: "distribution v3 registry", hint: hint}
	}
	return "", fmt.Errorf("unknown registry version %d", int(v))
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// requireTool fails the test when CI=true and skips it otherwise.
func requireTool(t testing.TB, err error) {
	t.Helper()
	ci.Missing(t, fmt.Sprintf("testregistry: %v", err))
}

// Start runs a registry for the test. It is stopped by t.Cleanup, and its
// storage (unless InMemory), config, certificates and log live in
// t.TempDir(). Start fails the test if the registry does not answer GET /v2/
// in time, with the tail of its log in the message.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Htpasswd && opts.Token {
		t.Fatalf("testregistry: Options.Htpasswd and Options.Token are exclusive")
	}
	bin, err := binary(opts.Version)
	if err != nil {
		var missing *missingError
		if errors.As(err, &missing) {
			requireTool(t, err)
		}
		t.Fatalf("testregistry: %v", err)
	}

	dir := t.TempDir()
	s := &Server{Version: opts.Version, LogFile: filepath.Join(dir, "registry.log")}
	cfg := config{version: opts.Version, root: filepath.Join(dir, "storage"), inMemory: opts.InMemory, notify: opts.Notify}

	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Push runs tagJobs requests at once; the default of 2 idle connections
	// per host would make most of them dial anew.
	transport.MaxIdleConnsPerHost = 2 * tagJobs
	var serving *issued
	if opts.TLS || opts.Token {
		ca, err := newCA()
		if err != nil {
			t.Fatalf("testregistry: %v", err)
		}
		if opts.TLS {
			serving, err = ca.issueServer()
			if err != nil {
				t.Fatalf("testregistry: %v", err)
			}
			s.CAFile = filepath.Join(dir, "ca.crt")
			if err := os.WriteFile(s.CAFile, ca.pem, 0o600); err != nil {
				t.Fatalf("testregistry: writing CA: %v", err)
			}
			s.CertPool = ca.pool
			transport.TLSClientConfig = &tls.Config{RootCAs: ca.pool}
			cfg.certFile, cfg.keyFile, err = serving.writeFiles(dir, "server")
			if err != nil {
				t.Fatalf("testregistry: %v", err)
			}
		}
		if opts.Token {
			s.Username, s.Password = "user-"+randomHex(4), randomHex(16)
			signer, err := ca.issueSigner()
			if err != nil {
				t.Fatalf("testregistry: %v", err)
			}
			ts := &tokenServer{
				username: s.Username,
				password: s.Password,
				signer:   signer,
				chain:    []string{base64.StdEncoding.EncodeToString(signer.cert.Raw)},
			}
			s.Realm = startTokenServer(t, ts, serving)
			cfg.realm = s.Realm
			cfg.rootCertBundle = filepath.Join(dir, "token-ca.crt")
			if err := os.WriteFile(cfg.rootCertBundle, ca.pem, 0o600); err != nil {
				t.Fatalf("testregistry: writing token root certificate bundle: %v", err)
			}
		}
	}
	if opts.Htpasswd {
		s.Username, s.Password = "user-"+randomHex(4), randomHex(16)
		cfg.htpasswd = filepath.Join(dir, "htpasswd")
		if err := writeHtpasswd(cfg.htpasswd, s.Username, s.Password); err != nil {
			var missing *missingError
			if errors.As(err, &missing) {
				requireTool(t, err)
			}
			t.Fatalf("testregistry: %v", err)
		}
	}
	s.Transport = transport
	t.Cleanup(transport.CloseIdleConnections)

	scheme := "http"
	if opts.TLS {
		scheme = "https"
	}
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testregistry: %v", err)
		}
		cfg.addr, cfg.instance = "127.0.0.1:"+strconv.Itoa(port), randomHex(8)
		host := cfg.addr
		if opts.Token {
			host = "localhost:" + strconv.Itoa(port)
		}
		s.Host = host
		s.URL = scheme + "://" + host
		err = s.run(t, bin, dir, cfg)
		if err == nil {
			return s
		}
		var race *bindError
		if errors.As(err, &race) && attempt < startAttempts {
			t.Logf("testregistry: %v; retrying on another port", err)
			continue
		}
		t.Fatalf("testregistry: %v", err)
	}
}

// bindError reports that the registry could not listen on its port.
type bindError struct {
	addr string
}

func (e *bindError) Error() string {
	return "registry could not listen on " + e.addr + ": address already in use"
}

// run starts the registry process with cfg and waits until it answers. On
// success the process is stopped by t.Cleanup; on failure it is stopped
// before run returns.
func (s *Server) run(t testing.TB, bin, dir string, cfg config) error {
	t.Helper()
	data, err := cfg.yaml()
	if err != nil {
		return err
	}
	configFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configFile, data, 0o600); err != nil {
		return fmt.Errorf("writing registry config: %w", err)
	}
	logFile, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating registry log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor

	cmd := exec.Command(bin, "serve", configFile)
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", bin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	if err := s.waitReady(exited, cfg.instance); err != nil {
		stop()
		tail := logTail(s.LogFile)
		if bytes.Contains(tail, []byte("address already in use")) {
			return &bindError{addr: cfg.addr}
		}
		select {
		case <-exited:
			if waitErr != nil {
				err = fmt.Errorf("%w (%v)", err, waitErr)
			}
		default:
		}
		return fmt.Errorf("%s registry %s at %s: %w; config %s; log tail:\n%s", s.Version, bin, s.URL, err, configFile, tail)
	}
	t.Cleanup(stop)
	return nil
}

// instanceHeader carries a registry's config.instance in its answers.
const instanceHeader = "X-Testregistry-Instance"

// waitReady polls GET /v2/ until the registry answers 200 or 401, the
// process exits, or readyTimeout passes. Only an answer that carries
// instance counts: a port taken between freePort and the bind (by another
// test's registry, in parallel) answers too, and this process then exits
// for the address in use.
func (s *Server) waitReady(exited <-chan struct{}, instance string) error {
	client := &http.Client{Transport: s.Transport, Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		select {
		case <-exited:
			return errors.New("exited before answering GET /v2/")
		default:
		}
		resp, err := client.Get(s.URL + "/v2/")
		if err == nil {
			resp.Body.Close()
			switch {
			case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized:
				err = fmt.Errorf("GET /v2/ answered %s", resp.Status)
			case resp.Header.Get(instanceHeader) != instance:
				err = errors.New("GET /v2/ was answered by another process on the port")
			default:
				return nil
			}
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", readyTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childEnv is the environment of a registry process: ours without
// REGISTRY_* variables (distribution reads them as config overrides), and
// with OpenTelemetry export off (v3 otherwise sends traces to an OTLP
// collector on localhost and logs every failure).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "REGISTRY_") || strings.HasPrefix(kv, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Distribution cannot report the port it bound for "127.0.0.1:0", so the
// port is picked here and can, rarely, be taken before the registry binds it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("picking a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last few KiB of the log at path.
func logTail(path string) []byte {
	const max = 4 << 10
	data, err := os.ReadFile(path)
	if err != nil {
		return []byte("(no log: " + err.Error() + ")")
	}
	if len(data) > max {
		data = data[len(data)-max:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data
}

// writeHtpasswd writes a bcrypt htpasswd file for user with the htpasswd
// tool from apache2-utils. Both registry versions accept only bcrypt, and
// the standard library cannot produce it.
func writeHtpasswd(path, user, pass string) error {
	bin, err := exec.LookPath("htpasswd")
	if err != nil {
		return &missingError{tool: "htpasswd", hint: "install it with `apt-get install apache2-utils`"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-Bbn", user, pass)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// The command line holds the password; report only the tool's output.
		return fmt.Errorf("running htpasswd: %s: %w", strings.TrimSpace(stderr.String()), err)
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, user+":$2") {
		return errors.New("htpasswd did not print a bcrypt entry")
	}
	if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing htpasswd file: %w", err)
	}
	return nil
}

// config is what Start varies in a registry's YAML config.
type config struct {
	version Version
	addr    string
	// instance is sent back in every answer's instanceHeader: it tells
	// this process's answers from another's on the same port.
	instance       string
	root           string
	inMemory       bool
	certFile       string
	keyFile        string
	htpasswd       string
	realm          string
	rootCertBundle string
	notify         *Notify
}

// yaml renders the config in the format the version accepts. Both read
// "version: 0.1" configs; the differences are noted inline.
func (c config) yaml() ([]byte, error) {
	httpCfg := map[string]any{
		"addr":   c.addr,
		"secret": randomHex(16),
		"headers": map[string]any{
			"X-Content-Type-Options": []string{"nosniff"},
			instanceHeader:           []string{c.instance},
		},
	}
	if c.certFile != "" {
		httpCfg["tls"] = map[string]any{
			"certificate": c.certFile,
			"key":         c.keyFile,
		}
	}
	storage := map[string]any{
		// Caches blob stats, which every manifest PUT repeats for the
		// image's config and layers.
		"cache":  map[string]any{"blobdescriptor": "inmemory"},
		"delete": map[string]any{"enabled": true},
	}
	if c.inMemory {
		storage["inmemory"] = map[string]any{}
	} else {
		storage["filesystem"] = map[string]any{"rootdirectory": c.root}
	}
	doc := map[string]any{
		"version": "0.1",
		"log": map[string]any{
			"level":     "error",
			"formatter": "text",
			"accesslog": map[string]any{"disabled": true},
		},
		"storage": storage,
		"http":    httpCfg,
	}
	if c.version == V3 {
		// v3 only: 2.8.2 has no tag list pagination and no "tags" section.
		doc["tags"] = map[string]any{"maxtags": v3MaxTags}
	}
	switch {
	case c.htpasswd != "":
		doc["auth"] = map[string]any{"htpasswd": map[string]any{
			"realm": "imagebump-testregistry",
			"path":  c.htpasswd,
		}}
	case c.realm != "":
		token := map[string]any{
			"realm":          c.realm,
			"service":        tokenService,
			"issuer":         tokenIssuer,
			"rootcertbundle": c.rootCertBundle,
		}
		if c.version == V3 {
			// v3 only: 2.8.2 verifies with libtrust and has no such key.
			token["signingalgorithms"] = []string{"ES256"}
		}
		doc["auth"] = map[string]any{"token": token}
	}
	if n := c.notify; n != nil {
		// Retries come quickly, so that a test's endpoint that starts
		// after the registry gets the events soon.
		doc["notifications"] = map[string]any{"endpoints": []any{map[string]any{
			"name":      "test",
			"url":       n.URL,
			"headers":   n.Headers,
			"timeout":   "5s",
			"threshold": 3,
			"backoff":   "200ms",
		}}}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding registry config: %w", err)
	}
	return out, nil
}
