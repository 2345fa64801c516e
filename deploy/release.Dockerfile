# syntax=docker/dockerfile:1
# The release image: GoReleaser (dockers_v2 in .goreleaser.yaml) builds it
# for linux/amd64 and linux/arm64 from the static binaries it has already
# built, which it places in the build context as $TARGETPLATFORM/imagebump.
# The root Dockerfile builds the same image from source.
FROM gcr.io/distroless/static-debian12:nonroot
ARG TARGETPLATFORM
COPY --chmod=0555 $TARGETPLATFORM/imagebump /usr/local/bin/imagebump
USER 65532:65532
WORKDIR /var/lib/imagebump
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/imagebump"]
CMD ["serve", "--config=/etc/imagebump/imagebump.yaml", "--listen=:8080", "--workdir=/var/lib/imagebump"]
