# volcano-plugin-webhook container image.
#
#   make image            (docker build with the git information; IMAGE=name:tag to rename)
#
# Two stages: Debian 12 with the -dev packages builds the binary (the Makefile, as
# `make` does on a workstation); Debian 12 slim with only the shared libraries it links
# against runs it, as an unprivileged user. The Deployment in manifests/ replaces CMD with
# its own serve flags.
#
# Base images are pinned to a Debian point release (12.12), not the moving "12" tag, so
# a rebuild gets the same distribution until this file changes. For a build that cannot
# change at all, pin the digest as well, taken from the registry once:
#   docker buildx imagetools inspect debian:12.12-slim     (the "Digest:" line)
#   FROM debian:12.12-slim@sha256:<that digest>
# The tag then only documents; the digest decides (a moved tag is ignored).

FROM debian:12.12 AS build
# What `make` needs for the binary; the unit tests (and Check) are not built here.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential pkg-config \
        libmicrohttpd-dev libgnutls28-dev libjansson-dev libjsmn-dev libcurl4-openssl-dev libssl-dev \
        libyaml-dev \
        libmimalloc-dev \
 && rm -rf /var/lib/apt/lists/*
# The build context has no .git (.dockerignore): `make image` passes what git says.
ARG GIT_VERSION=unknown
ARG GIT_COMMIT=unknown
# Reproducible builds: the build date, when given (else the time of this build).
ARG SOURCE_DATE_EPOCH
WORKDIR /src
COPY . .
RUN make -j"$(nproc)" GIT_VERSION="$GIT_VERSION" GIT_COMMIT="$GIT_COMMIT" \
 && strip --strip-unneeded build/volcano-plugin-webhook \
 && build/volcano-plugin-webhook serve --help >/dev/null

FROM debian:12.12-slim
# The libraries of `readelf -d volcano-plugin-webhook` (libc6 is in the base image) and
# the CA certificates for a --kubeconfig that names a public API server.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libmicrohttpd12 libgnutls30 libjansson4 libcurl4 libssl3 libyaml-0-2 libmimalloc2.0 \
        ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/volcano-plugin-webhook /usr/local/bin/volcano-plugin-webhook
COPY LICENSE /usr/share/doc/volcano-plugin-webhook/LICENSE
# jsmn (MIT) is a header compiled into the binary: its notice travels with it.
COPY --from=build /usr/share/doc/libjsmn-dev/copyright /usr/share/doc/volcano-plugin-webhook/jsmn.copyright
# 65532: the conventional "nonroot" uid/gid, as the Deployment's securityContext expects.
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/usr/local/bin/volcano-plugin-webhook"]
CMD ["serve", \
     "--tls-cert-file=/etc/webhook/certs/tls.crt", \
     "--tls-private-key-file=/etc/webhook/certs/tls.key"]
