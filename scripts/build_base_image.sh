#!/usr/bin/env bash
# Build the local base image that every repo2rlenv sandbox and task Dockerfile starts FROM.
#
# Why a script: our machines (and many air-gapped or proxied CI hosts) cannot pull images from a
# registry, so the image is made from Debian packages with debootstrap and `docker import`, then
# finished with a small `docker build` that installs pytest and coverage into /opt/venv.
#
# Two suites are supported, one per Python the install plan can ask for (repo2rlenv/discovery/python.py
# keeps the table image -> Python): bookworm (Python 3.11, the default) and trixie (Python 3.13), picked
# automatically from a repo's requires-python.
#
# Usage: scripts/build_base_image.sh [--suite bookworm|trixie] [--tag TAG] [--ca-bundle FILE] [--mirror URL]
#                                    [--podman] [--force]
#   --suite SUITE     Debian suite; the tag defaults to repo2rlenv-base:SUITE
#   --mirror URL      Debian mirror (default: $DEBIAN_MIRROR if set, else debootstrap's own default)
#   --ca-bundle FILE  trust this PEM bundle inside the image (TLS-intercepting proxies); default: the
#                     bundle named by PIP_CERT / REQUESTS_CA_BUNDLE / SSL_CERT_FILE when one is set
#   --podman          also import the finished image into podman's store (for `harbor run -e podman`)
#   --force           rebuild even when TAG already exists
set -euo pipefail

tag=""
suite="bookworm"
# No mirror host is written here: debootstrap picks its default unless one is asked for.
mirror="${DEBIAN_MIRROR:-}"
ca_bundle="${PIP_CERT:-${REQUESTS_CA_BUNDLE:-${SSL_CERT_FILE:-}}}"
to_podman=0
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --ca-bundle) ca_bundle="$2"; shift 2 ;;
    --suite) suite="$2"; shift 2 ;;
    --mirror) mirror="$2"; shift 2 ;;
    --podman) to_podman=1; shift ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "build_base_image.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

tag="${tag:-repo2rlenv-base:$suite}"
# Bump when the image's contents change: an image built by an older recipe is rebuilt, not reused.
recipe=5
kernel_src="$(dirname "$0")/../repo2rlenv/sandbox/templates/r2e_kernel.c"
heap_src="$(dirname "$0")/../repo2rlenv/sandbox/templates/r2e_heap.h"
# The kernel extension's source is part of the stamp: an image carrying an older _r2e_kernel (the barrier's
# calls, the audit hook's C half, the one-time heap) is rebuilt, never graded with.
stamp="$recipe-$(cat "$kernel_src" "$heap_src" | sha256sum | cut -c1-12)"

if [ -n "$ca_bundle" ] && [ ! -f "$ca_bundle" ]; then
  echo "build_base_image.sh: CA bundle not found: $ca_bundle" >&2; exit 2
fi
command -v docker >/dev/null || { echo "build_base_image.sh: docker CLI not found" >&2; exit 2; }
docker info >/dev/null 2>&1 || { echo "build_base_image.sh: no Docker daemon answers (start dockerd)" >&2; exit 2; }

present=$(docker image inspect -f '{{ index .Config.Labels "repo2rlenv.base-recipe" }}' "$tag" 2>/dev/null || true)
if [ "$force" = 0 ] && [ "$present" = "$stamp" ]; then
  echo "base image $tag already present"
else
  command -v debootstrap >/dev/null || { echo "build_base_image.sh: debootstrap not found (apt-get install -y debootstrap)" >&2; exit 2; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  rootfs="$work/rootfs"
  echo "debootstrap $suite into $rootfs (about a minute)"
  # Besides Python and git: what test suites commonly assume a Debian system has and minbase leaves out —
  # time zones (zoneinfo tests), locales (setlocale to en_US.UTF-8), a pager (pydoc/help tests) and
  # /etc/services and /etc/protocols (socket.getservbyname).
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,git,bash,ca-certificates,procps,tzdata,locales,less,netbase \
    "$suite" "$rootfs" ${mirror:+"$mirror"} >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  printf 'C.UTF-8 UTF-8\nen_US.UTF-8 UTF-8\n' >"$rootfs/etc/locale.gen"
  # Keep the image small: apt lists and caches are not needed at run time.
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  raw="$tag-rootfs"
  raw="${raw//:/-}:raw"
  tar -C "$rootfs" -c . | docker import - "$raw" >/dev/null

  ctx="$work/ctx"
  mkdir -p "$ctx"
  if [ -n "$ca_bundle" ]; then cp "$ca_bundle" "$ctx/extra-ca.pem"; else : >"$ctx/extra-ca.pem"; fi
  cp "$kernel_src" "$ctx/r2e_kernel.c"
  cp "$heap_src" "$ctx/r2e_heap.h"
  # The verifier's kernel extension (_r2e_kernel: Landlock, seccomp and prctl without ctypes) is compiled
  # in a throw-away stage: the compiler and headers never reach the image.
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $raw AS kernel
COPY extra-ca.pem /usr/local/share/ca-certificates/repo2rlenv-extra.crt
RUN update-ca-certificates >/dev/null 2>&1 || true
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      gcc libc6-dev python3-dev >/dev/null
COPY r2e_kernel.c r2e_heap.h /src/
RUN mkdir /out && gcc -shared -fPIC -O2 -Wall -Werror \$(python3-config --includes) /src/r2e_kernel.c \\
      -o /out/_r2e_kernel\$(python3-config --extension-suffix)

FROM $raw
LABEL repo2rlenv.base-recipe=$stamp repo2rlenv.suite=$suite
RUN locale-gen >/dev/null
COPY extra-ca.pem /usr/local/share/ca-certificates/repo2rlenv-extra.crt
RUN update-ca-certificates >/dev/null 2>&1 || true
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \\
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \\
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \\
    PIP_DISABLE_PIP_VERSION_CHECK=1 \\
    PIP_NO_CACHE_DIR=1 \\
    PYTHONDONTWRITEBYTECODE=1 \\
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    LANG=C.UTF-8
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install -q "pytest>=8,<10" "coverage>=7.4,<8"
COPY --from=kernel /out/ /tmp/r2e-kernel/
RUN cp /tmp/r2e-kernel/_r2e_kernel* "\$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/" \\
 && rm -rf /tmp/r2e-kernel && /opt/venv/bin/python -c 'import _r2e_kernel; _r2e_kernel.audit_hook'
# CPython's test and demo extension modules (_testcapi hands out code objects with no audit event).
RUN find /usr/lib/python3*/lib-dynload -regextype posix-extended \\
      -regex '.*/(_test[a-z_]*|_ctypes_test|_xxtestfuzz|xxlimited(_35)?|xxsubtype)\\.[^/]*\\.so' -delete
SHELL ["/bin/bash", "-c"]
CMD ["/bin/bash"]
DOCKERFILE
  echo "installing pytest and coverage into /opt/venv"
  docker build --network host -q -t "$tag" "$ctx" >/dev/null
  docker image rm "$raw" >/dev/null 2>&1 || true
  echo "built $tag"
fi

if [ "$to_podman" = 1 ]; then
  command -v podman >/dev/null || { echo "build_base_image.sh: podman not found" >&2; exit 2; }
  # Reloaded when podman's copy is from another recipe (an older image would grade with the old verifier
  # support, e.g. without the kernel extension).
  in_podman=$(podman image inspect --format '{{ index .Config.Labels "repo2rlenv.base-recipe" }}' "$tag" 2>/dev/null || true)
  if [ "$force" = 1 ] || [ "$in_podman" != "$stamp" ]; then
    docker save "$tag" | podman load >/dev/null
    echo "loaded $tag into podman"
  fi
fi
