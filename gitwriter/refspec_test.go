package gitwriter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/imagebump/imagebump/internal/redact"
	"github.com/imagebump/imagebump/internal/testkit/testgit"
)

// recordPushOptions makes the bare repository advertise push options and
// record, in a file, the options each push carried (as a pre-receive hook
// sees them).
func recordPushOptions(t *testing.T, bare string) string {
	t.Helper()
	testgit.Git(t, bare, "config", "receive.advertisePushOptions", "true")
	log := filepath.Join(t.TempDir(), "options.log")
	hook := "#!/bin/sh\ni=0\nwhile [ \"$i\" -lt \"${GIT_PUSH_OPTION_COUNT:-0}\" ]; do eval \"echo \\$GIT_PUSH_OPTION_$i\" >> " + log + "; i=$((i+1)); done\necho --- >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestUpdateRefspecAndOptions pushes as Flux's git.push.refspec and
// git.push.options do, over the real git http-backend: with a push branch
// both the branch and the refspec; with the refspec alone the tracked
// branch and the refspec, as Flux's controller does.
func TestUpdateRefspecAndOptions(t *testing.T) {
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
	for _, tt := range []struct {
		name       string
		pushBranch string
		refspec    string
		wantRefs   []string // refs that must hold the new commit
	}{
		{"branch and refspec", "auto", "refs/heads/auto:refs/for/main", []string{"refs/heads/auto", "refs/for/main"}},
		{"refspec alone", "", "HEAD:refs/for/main", []string{"refs/heads/main", "refs/for/main"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare, s, auth := httpRemote(t)
			log := recordPushOptions(t, bare)
			mainBefore := mainSHA(t, bare)
			r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
			res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: tt.pushBranch, Refspec: tt.refspec,
				Options: []string{"topic=bump-app", "merge_request.create"}}, edit)
			if err != nil {
				t.Fatal(err)
			}
			refs := testgit.Refs(t, bare)
			for _, ref := range tt.wantRefs {
				if refs[ref] != res.Commit {
					t.Errorf("%s = %q, want the new commit %s", ref, refs[ref], res.Commit)
				}
			}
			if got := mainSHA(t, bare); tt.pushBranch != "" && got != mainBefore {
				t.Errorf("main moved to %s with a push branch of its own", got)
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			pushes := strings.Split(strings.TrimSuffix(string(data), "---\n"), "---\n")
			if len(pushes) != len(tt.wantRefs) {
				t.Fatalf("%d pushes, want %d:\n%s", len(pushes), len(tt.wantRefs), data)
			}
			for _, p := range pushes {
				// go-git sends options from a map, as Flux does: in no set
				// order.
				got := strings.Fields(p)
				slices.Sort(got)
				if !slices.Equal(got, []string{"merge_request.create=", "topic=bump-app"}) {
					t.Errorf("push options = %q, want topic=bump-app and merge_request.create=", p)
				}
			}
		})
	}
}

func TestUpdateRefspecSourceMustBeTheCommit(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: t.TempDir()})
	edit := setFiles(map[string]string{"a.yaml": "a: 2\n"}, "Bump", nil)
	_, err := r.Update(t.Context(), Update{Commit: author, Refspec: "refs/heads/other:refs/for/main"}, edit)
	if err == nil || !strings.Contains(err.Error(), "the source must name the commit imagebump made") {
		t.Errorf("Update = %v, want a refusal of the source", err)
	}
}

// TestUpdateRefspecAndIndexFail: the push branch gets the commit, then the
// refspec's push fails and so does writing the Git index (another git
// holds index.lock): the error names both, and the result still says the
// push branch has the commit.
func TestUpdateRefspecAndIndexFail(t *testing.T) {
	bare := testgit.NewBare(t, seed)
	old := testgit.Commit(t, bare, "other", map[string]string{"other.yaml": "a: 1\n"}, nil, "elsewhere")
	testgit.Git(t, bare, "update-ref", "refs/for/main", old)
	workdir := t.TempDir()
	r := mustOpen(t, Options{URL: fileURL(bare), Branch: "main", Workdir: workdir})
	edit := func(ctx context.Context, dir string) ([]string, string, error) {
		if err := os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o644); err != nil {
			return nil, "", err
		}
		return setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)(ctx, dir)
	}
	res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: "auto", Refspec: "refs/heads/auto:refs/for/main"}, edit)
	if err == nil {
		t.Fatal("Update succeeded")
	}
	for _, want := range []string{"remote's refs/for/main", "updating the working copy to the new commit failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if auto := testgit.Refs(t, bare)["refs/heads/auto"]; res == nil || !res.Pushed || res.Commit != auto {
		t.Errorf("Update = %+v; want the push to auto (%s) reported with the error", res, auto)
	}
}

// TestUpdateRefspecNotFastForward pushes a refspec whose destination holds
// a commit the new one does not build on, as a plain Git server keeps
// refs/for/main after a first push (Gerrit and AGit keep no such ref).
// Flux does not force a refspec push and neither does imagebump: the push
// fails, and the error says why and what to do rather than go-git's bare
// "object not found".
func TestUpdateRefspecNotFastForward(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, bare string) string // returns where refs/for/main points
	}{
		// The clone holds the remote commit's history: go-git says
		// "non-fast-forward update".
		{"unrelated commit", func(t *testing.T, bare string) string {
			return testgit.Commit(t, bare, "other", map[string]string{"other.yaml": "a: 1\n"}, nil, "elsewhere")
		}},
		// The remote commit branches off below the shallow clone's one
		// commit: go-git says "object not found".
		{"beyond the shallow clone", func(t *testing.T, bare string) string {
			testgit.Commit(t, bare, "main", map[string]string{"a.yaml": "a: 1\n"}, nil, "first")
			side := testgit.Commit(t, bare, "side", map[string]string{"b.yaml": "b: 1\n"}, nil, "side")
			testgit.Commit(t, bare, "main", map[string]string{"a.yaml": "a: 2\n"}, nil, "second")
			return side
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare, s, auth := httpRemote(t)
			old := tt.setup(t, bare)
			testgit.Git(t, bare, "update-ref", "refs/for/main", old)
			r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
			edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
			res, err := r.Update(t.Context(), Update{Commit: author, PushBranch: "auto", Refspec: "refs/heads/auto:refs/for/main"}, edit)
			if err == nil {
				t.Fatal("Update succeeded over a ref it would have to force")
			}
			// The push branch got the commit before the refspec failed:
			// the result says so.
			if auto := testgit.Refs(t, bare)["refs/heads/auto"]; res == nil || !res.Pushed || res.Commit != auto || auto == "" {
				t.Errorf("Update = %+v; want the push to auto (%s) reported with the error", res, auto)
			}
			for _, want := range []string{`refspec "refs/heads/auto:refs/for/main"`, "remote's refs/for/main", "not a fast-forward", "never forces"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			if got := testgit.Refs(t, bare)["refs/for/main"]; got != old {
				t.Errorf("refs/for/main = %s, want it left at %s", got, old)
			}
		})
	}
}

// TestPushRefusalSaysWhy: a server hook that refuses a push explains why
// (a protected branch, say); its words are in the error, over the real git
// http-backend, with what looks like a credential redacted. A hook that
// accepts may talk too: the push succeeds.
func TestPushRefusalSaysWhy(t *testing.T) {
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", nil)
	for _, tt := range []struct {
		name, hook string
		wantErr    string
	}{
		{"refused", "#!/bin/sh\necho 'GL-HOOK-ERR: branch main is protected; open a merge request' >&2\necho 'your token ghp_0123456789abcdefABCDEF0123 is not allowed' >&2\nexit 1\n",
			"pre-receive hook declined; the server said: GL-HOOK-ERR: branch main is protected; open a merge request / your token REDACTED is not allowed; if main is protected, have imagebump push to a branch of its own and open a pull request there (push.branch with push.pullRequest"},
		{"accepted", "#!/bin/sh\necho 'thanks for the push' >&2\nexit 0\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bare, s, auth := httpRemote(t)
			if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(tt.hook), 0o755); err != nil {
				t.Fatal(err)
			}
			before := mainSHA(t, bare)
			var logs bytes.Buffer
			r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			res, err := r.Update(t.Context(), Update{Commit: author}, edit)
			if tt.wantErr == "" {
				if err != nil || mainSHA(t, bare) != res.Commit {
					t.Fatalf("Update() = %+v, %v; want the push accepted", res, err)
				}
				// What it said is logged, where it was dropped.
				if !strings.Contains(logs.String(), `msg="the server said, accepting the push"`) || !strings.Contains(logs.String(), `ref=refs/heads/main text="thanks for the push"`) {
					t.Errorf("the accepting hook's words are not in the log:\n%s", logs.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Update() error = %v; want it to hold %q", err, tt.wantErr)
			}
			if got := mainSHA(t, bare); got != before {
				t.Errorf("main moved to %s after a refused push", got)
			}
		})
	}
}

// TestPushRefusalNotRetried: a push refused by the server (a hook, a
// protected branch) while the remote branch did not move is not a race:
// Update tries once and returns the refusal, not ErrConflict. The bug it
// guards against: a refusal redone MaxAttempts times, with backoff, and
// reported as a conflict with a concurrent push that never happened.
func TestPushRefusalNotRetried(t *testing.T) {
	bare, s, auth := httpRemote(t)
	hook := "#!/bin/sh\necho 'GitLab: You are not allowed to push code to protected branches' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	before := mainSHA(t, bare)
	r := mustOpen(t, Options{URL: s.URL, Branch: "main", Auth: auth, Workdir: t.TempDir()})
	var calls int
	edit := setFiles(map[string]string{"clusters/prod/app.yaml": "image: app:1.1.0\n"}, "Bump app", &calls)
	_, err := r.Update(t.Context(), Update{Commit: author, MaxAttempts: 3}, edit)
	if err == nil || !strings.Contains(err.Error(), "You are not allowed to push code to protected branches") {
		t.Fatalf("Update() error = %v; want the hook's refusal", err)
	}
	if errors.Is(err, ErrConflict) {
		t.Errorf("Update() error = %v; a refusal is not a conflict", err)
	}
	if calls != 1 {
		t.Errorf("the edit ran %d times, want 1: a refusal is not retried", calls)
	}
	if got := mainSHA(t, bare); got != before {
		t.Errorf("main moved to %s after a refused push", got)
	}
}

// TestRedactTokens: words shaped like credentials go (those a review
// found kept by a first version among them), prose, paths, branch names
// and short hashes stay.
func TestRedactTokens(t *testing.T) {
	for in, want := range map[string]string{
		"Protected branch update failed for refs/heads/main.":                            "Protected branch update failed for refs/heads/main.",
		"commit 1a2b3c4d lacks a sign-off":                                               "commit 1a2b3c4d lacks a sign-off",
		"edit clusters/prod/app.yaml by hand, see https://gitlab.example.com/acme/fleet": "edit clusters/prod/app.yaml by hand, see https://gitlab.example.com/acme/fleet",
		"GitLab: You are not allowed to push code to protected branches":                 "GitLab: You are not allowed to push code to protected branches",
		"denied: pw-580dc187b47dacad4368a24a":                                            "denied: REDACTED",
		"denied: dXNlcjpTRUtSSVQtcGFzc3dvcmQtMTIz":                                       "denied: REDACTED",
		`token="glpat-AbCdEf0123456789xyz" refused`:                                      "REDACTED refused",
		"commit 0123456789abcdef0123456789abcdef01234567 is not signed":                  "commit REDACTED is not signed",
		"key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY":                                   "key REDACTED",
		"password P@ssw0rd!2024#secret":                                                  "password REDACTED",
		"token=correcthorsebatterystaple":                                                "REDACTED",
		"glpat-ABCDEFGHIJKLMNOPQRST refused":                                             "REDACTED refused",
		"token AbCdEfGhIjKlMnO":                                                          "token REDACTED",
		"see https://user:pw@git.example.com/x":                                          "see REDACTED",
	} {
		if got := redactTokens(in); got != want {
			t.Errorf("redactTokens(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRemoteTextCuts: what the server said is cleaned of the known
// secrets before it is cut, a line cut at its start is dropped, and the
// last lines (where a refusal's reason comes) are kept.
func TestRemoteTextCuts(t *testing.T) {
	var secrets redact.Secrets
	// Not shaped like a credential: only its value can remove it.
	const pass = "my-long-pass-words"
	secrets.Set("git password", pass)
	said := remoteText{secrets: &secrets}
	fmt.Fprintf(&said, "remote: %sthe password is %s\n", strings.Repeat("aa ", 60), pass)
	if got := strings.Join(said.lines(), "/"); strings.Contains(got, "my-l") || !strings.Contains(got, "the password is REDA") {
		t.Errorf("a line cut at 200 bytes: %q; want the password removed whole before the cut", got)
	}
	said = remoteText{secrets: &secrets}
	fmt.Fprintf(&said, "start of %s\n", pass)
	for i := range 2000 {
		fmt.Fprintf(&said, "remote: progress line %d\n", i)
	}
	fmt.Fprint(&said, "remote: denied: branch main is protected\n")
	lines := said.lines()
	if !said.cut || len(lines) != 10 || lines[9] != "denied: branch main is protected" {
		t.Errorf("lines after a flood: cut %v, %d lines, last %q; want the last 10, ending with the refusal", said.cut, len(lines), lines[len(lines)-1])
	}
}
