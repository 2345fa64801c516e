#!/usr/bin/env bash
# scripts/test.sh installs what imagebump's tests need on a fresh Debian
# machine, then runs every test with the race detector. It is the one test
# command: README.md names it and .ci/run runs it.
#
# What it installs (each step is skipped when already present):
#   - Debian packages: docker-registry (CNCF distribution 2.8.2), apache2-utils
#     (htpasswd), openssh-server (sshd for the SSH git tests), git,
#     gnupg, gcc.
#   - distribution v3.1.2 (`registry`), built once with `go install` into the
#     tool cache, because only v3 paginates tag lists.
#   - Gitea 1.26.0, built once from its module (scripts/build-gitea.sh), for
#     the pull-request tests.
#   - gnupg (git verify-commit of signed commits) and gcc (cgo for Gitea).
#   - systemd (systemd-analyze rates and verifies the units in deploy/vm).
#   - chromium and fonts-dejavu-core: serve's status page is checked in a
#     headless browser, driven with chromedp, and screenshotted.
#   - strace: a test holds the files run and plan report read to the files
#     the kernel saw them open.
#   - GoReleaser v2.15.1, built once with `go install` into the tool cache,
#     for `goreleaser check` of .goreleaser.yaml.
# Nothing is installed for FUSE: the tests that mount a file system need
# root and /dev/fuse, which CI's machines have.
# The tool cache lives outside the clone so later runs reuse it:
#   ${IMAGEBUMP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/imagebump-tools}
set -euo pipefail

cd "$(dirname "$0")/.."
tools="${IMAGEBUMP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/imagebump-tools}"
mkdir -p "$tools/bin"

log() { printf '==> %s\n' "$*" >&2; }

# Debian packages.
pkgs=()
command -v docker-registry >/dev/null 2>&1 || pkgs+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || pkgs+=(apache2-utils)
[ -x /usr/sbin/sshd ] || pkgs+=(openssh-server)
command -v git >/dev/null 2>&1 || pkgs+=(git)
command -v gpg >/dev/null 2>&1 || pkgs+=(gnupg)
command -v gcc >/dev/null 2>&1 || pkgs+=(gcc libc6-dev)
command -v systemd-analyze >/dev/null 2>&1 || pkgs+=(systemd)
command -v chromium >/dev/null 2>&1 || pkgs+=(chromium)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || pkgs+=(fonts-dejavu-core)
[ -x /usr/bin/strace ] || pkgs+=(strace)
if [ "${#pkgs[@]}" -gt 0 ]; then
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	log "installing Debian packages: ${pkgs[*]}"
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

# distribution v3 (paginating registry), built once into the tool cache.
if [ ! -x "$tools/bin/registry" ]; then
	log "building distribution v3.1.2 into $tools/bin (about 3 minutes, once)"
	(cd / && GOBIN="$tools/bin" GOFLAGS=-buildvcs=false go install github.com/distribution/distribution/v3/cmd/registry@v3.1.2)
fi
export IMAGEBUMP_REGISTRY_V3="$tools/bin/registry"

# GoReleaser, for `goreleaser check` of .goreleaser.yaml (built once).
goreleaser_dir="$tools/goreleaser-v2.15.1"
if [ ! -x "$goreleaser_dir/goreleaser" ]; then
	log "building GoReleaser v2.15.1 into $goreleaser_dir (about 5 minutes, once)"
	(cd / && GOBIN="$goreleaser_dir" GOFLAGS=-buildvcs=false go install github.com/goreleaser/goreleaser/v2@v2.15.1)
fi
export IMAGEBUMP_GORELEASER="$goreleaser_dir/goreleaser"

# Gitea, for the pull-request tests (built once; about 11 minutes).
log "building Gitea 1.26.0 into $tools if needed"
IMAGEBUMP_TOOLS="$tools" ./scripts/build-gitea.sh
export IMAGEBUMP_GITEA="$tools/gitea-1.26.0/gitea"
export IMAGEBUMP_DOCKER_REGISTRY="$(command -v docker-registry)"

log "checking formatting, vet and go mod tidy"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
if ! go mod tidy -diff; then
	echo "go.mod and go.sum are not tidy: run go mod tidy" >&2
	exit 1
fi

# The folded-names tests mount a FUSE file system (internal/testkit/foldfs):
# load the module where the kernel has it as one.
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null || true

# Test artefacts (such as the status page's screenshot) are kept under
# $out/_artifacts, one folder per test.
out="${IMAGEBUMP_TEST_OUTPUT:-${TMPDIR:-/tmp}/imagebump-test-output}"
mkdir -p "$out"
log "running every test with -race (artefacts in $out/_artifacts)"
go test -race -count=1 -timeout 30m -artifacts -outputdir "$out" ./...
