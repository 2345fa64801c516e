// Package deploy holds no code: its directory holds the files that install
// imagebump (kubernetes/: a kustomize base, overlays and components; vm/:
// systemd units, a compose file and a crontab line; release.Dockerfile for
// GoReleaser), and its tests check them together with the root Dockerfile,
// .dockerignore, .goreleaser.yaml and the GitHub workflows: every
// kustomization builds and its objects decode strictly into the Kubernetes
// API types and meet Pod Security "restricted", the systemd units rate "OK"
// or better in systemd-analyze security, the release targets cross-compile
// to static binaries, and the configs parse.
package deploy
