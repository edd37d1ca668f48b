#!/usr/bin/env bash
# One-shot, idempotent set-up of a Debian machine for repo2rlenv: system packages, the Python package,
# a running Docker daemon and the local base images. Used by the README's commands and by .ci/run.
#
#   bash scripts/dev_setup.sh            # everything
#   R2E_SKIP_DOCKER=1 bash scripts/...   # only the Python package (local sandbox only)
#   R2E_SKIP_HARBOR=1 bash scripts/...   # no podman/Harbor (the real-Harbor tests then fail under CI)
set -euo pipefail
# litellm (imported by this package's model paths and by Harbor) fetches a price table over the network
# at import unless told to use its bundled copy: without this, set-up prints its download retries.
export LITELLM_LOCAL_MODEL_COST_MAP=True
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_need=()
if [ "${R2E_SKIP_DOCKER:-0}" != 1 ]; then
  command -v dockerd >/dev/null || apt_need+=(docker.io)
  command -v debootstrap >/dev/null || apt_need+=(debootstrap)
fi
command -v git >/dev/null || apt_need+=(git)
# Headless Chromium renders the eval report in its test.
command -v chromium >/dev/null || apt_need+=(chromium)
if [ ${#apt_need[@]} -gt 0 ]; then
  echo "installing system packages: ${apt_need[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${apt_need[@]}" >/dev/null
fi

echo "installing the repo2rlenv package (editable) and its test dependencies"
python3 -m pip install -q -e ".[dev]" 2>&1 | grep -v -E "^WARNING: Location .* is ignored" || true
python3 -c "import repo2rlenv, litellm, docker, libcst" >/dev/null

[ "${R2E_SKIP_DOCKER:-0}" = 1 ] && exit 0

if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd"
  as_root bash -c 'nohup dockerd >/var/log/r2e-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/r2e-dockerd.log" >&2; exit 1; }
fi
# Both base images: the install plan picks trixie (Python 3.13) for repos whose requires-python the
# bookworm image (Python 3.11) does not satisfy.
bash scripts/build_base_image.sh --suite bookworm
bash scripts/build_base_image.sh --suite trixie
[ "${R2E_SKIP_HARBOR:-0}" = 1 ] && exit 0
# Real Harbor (podman backend, Python 3.12 venv) for the tests that run tasks the way users will.
bash scripts/harbor_setup.sh
