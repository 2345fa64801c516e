#!/usr/bin/env bash
# scripts/build-gitea.sh builds Gitea v1.26.0 from its Go module into the tool
# cache, once, for the pull-request tests. Gitea is not in Debian and
# `go install` refuses it (its go.mod has replace directives), so the module
# source is downloaded, copied to a writable folder and built there with
# sqlite support (about 11 minutes on 2 cores). The binary and the source
# (Gitea serves its templates and assets from STATIC_ROOT_PATH) stay in
#   ${IMAGEBUMP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/imagebump-tools}/gitea-1.26.0
set -euo pipefail

version=1.26.0
tools="${IMAGEBUMP_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/imagebump-tools}"
dest="$tools/gitea-$version"
if [ -x "$dest/gitea" ]; then
	exit 0
fi
mkdir -p "$tools"
src="$(cd / && GOFLAGS=-mod=mod go mod download -json "code.gitea.io/gitea@v$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$src" ] || [ ! -d "$src" ]; then
	echo "build-gitea: could not download code.gitea.io/gitea@v$version" >&2
	exit 1
fi
work="$dest.tmp"
rm -rf "$work"
cp -r "$src" "$work"
chmod -R u+w "$work"
(cd "$work" && CGO_ENABLED=1 GOFLAGS=-buildvcs=false go build -tags "sqlite sqlite_unlock_notify" -o gitea .)
rm -rf "$dest"
mv "$work" "$dest"
echo "build-gitea: built $dest/gitea" >&2
