# syntax=docker/dockerfile:1
# imagebump's container image, built from source: one static binary on
# distroless "static" (CA certificates, tzdata, /etc/passwd with the nonroot
# user 65532, no shell, no package manager). No git either: gitwriter serves
# file:// remotes in process, and https and ssh remotes never needed it.
#
#   docker build -t imagebump .      # BuildKit: Docker 23 or newer, or buildx
#   docker buildx build --platform linux/amd64,linux/arm64 -t imagebump .
#   docker run --rm -v "$PWD/imagebump.yaml:/etc/imagebump/imagebump.yaml:ro" imagebump \
#     run -c /etc/imagebump/imagebump.yaml
#
# Releases are built by GoReleaser from deploy/release.Dockerfile with the
# binaries it has already built; this file is for building from a checkout.

# The build runs on the builder's own platform and cross-compiles: no
# emulation for the other architectures.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS TARGETARCH
# Empty: the version Go recorded, else "devel". Releases pass the tag.
ARG VERSION=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/imagebump/imagebump/internal/commands.version=${VERSION}" \
      -o /out/imagebump ./cmd/imagebump

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build --chmod=0555 /out/imagebump /usr/local/bin/imagebump
USER 65532:65532
# Created owned by USER, so that a named volume mounted here (compose) is
# writable by imagebump.
WORKDIR /var/lib/imagebump
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/imagebump"]
CMD ["serve", "--config=/etc/imagebump/imagebump.yaml", "--listen=:8080", "--workdir=/var/lib/imagebump"]
