# imagebump container image: the binary on a small Debian base with git
# (go-git's file:// transport runs git-upload-pack/git-receive-pack) and CA
# certificates. HTTPS and SSH remotes need no git binary.
#
#   docker build -t imagebump .
#   docker run --rm -v $PWD/imagebump.yaml:/etc/imagebump/imagebump.yaml imagebump run
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/imagebump/imagebump/internal/commands.version=${VERSION}" \
      -o /out/imagebump ./cmd/imagebump

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 65532 --home-dir /var/lib/imagebump --create-home imagebump
COPY --from=build /out/imagebump /usr/local/bin/imagebump
USER 65532:65532
WORKDIR /var/lib/imagebump
ENTRYPOINT ["/usr/local/bin/imagebump", "-c", "/etc/imagebump/imagebump.yaml"]
CMD ["run", "--workdir", "/var/lib/imagebump/work"]
