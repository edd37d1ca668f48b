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
# A C compiler and the system Python's headers: the verifier's kernel extension (_r2e_kernel) is built
# for the interpreters the tests grade with (the base images build their own).
command -v cc >/dev/null || apt_need+=(gcc libc6-dev)
sys_py=$(command -v /usr/bin/python3 || true)
if [ -n "$sys_py" ] && [ ! -f "$("$sys_py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; then
  apt_need+=(python3-dev)
fi
if [ ${#apt_need[@]} -gt 0 ]; then
  echo "installing system packages: ${apt_need[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${apt_need[@]}" >/dev/null
fi

# Docker next, and both base images built in the background (debootstrap, apt and pip inside the builds)
# while pip installs the Python side below: on a fresh machine the two are several minutes each.
# The install plan picks trixie (Python 3.13) for repos whose requires-python the bookworm image
# (Python 3.11) does not satisfy.
base_logs="$(mktemp -d)"
base_pids=()
if [ "${R2E_SKIP_DOCKER:-0}" != 1 ]; then
  if ! docker info >/dev/null 2>&1; then
    echo "starting dockerd"
    as_root bash -c 'nohup dockerd >/var/log/r2e-dockerd.log 2>&1 &'
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /var/log/r2e-dockerd.log" >&2; exit 1; }
  fi
  for suite in bookworm trixie; do
    bash scripts/build_base_image.sh --suite "$suite" >"$base_logs/$suite.log" 2>&1 &
    base_pids+=("$suite:$!")
  done
fi
wait_base_images() {  # each build's output, in order; the first failure ends the set-up with its log
  local entry suite
  for entry in "${base_pids[@]}"; do
    suite="${entry%%:*}"
    if ! wait "${entry#*:}"; then
      cat "$base_logs/$suite.log" >&2
      echo "building the $suite base image failed" >&2
      exit 1
    fi
    cat "$base_logs/$suite.log"
  done
  rm -rf "$base_logs"
}

echo "installing the repo2rlenv package (editable) and its test dependencies"
python3 -m pip install -q -e ".[dev]" 2>&1 | grep -v -E "^WARNING: Location .* is ignored" || true
python3 -c "import repo2rlenv, litellm, docker, libcst" >/dev/null

# The RL trainers the scoring adapters are tested against (tests/scoring/test_trl_real.py, test_verl_real.py):
# torch 2.13.0 first (a CPU build for Python 3.11 on this machine; pip must never swap it for another, which
# would download a multi-GB CUDA build), then the `rl` extra (TRL) with a constraints file pinning torch and
# the TRL the tests were written against. verl pins transformers and huggingface_hub below this
# environment's, so it gets its own venv over the system site-packages (torch shared). Skipped when the
# pinned versions are already there. R2E_SKIP_RL=1 skips it (those tests then fail under CI).
rl_versions_ok() {  # PYTHON REQ...: every requirement satisfied in PYTHON's environment
  "$@" 2>/dev/null <<'PY'
import sys
from importlib.metadata import version
from packaging.requirements import Requirement
from packaging.version import Version

for text in sys.argv[1:]:
    req = Requirement(text)
    if not req.specifier.contains(Version(version(req.name)).public, prereleases=True):
        sys.exit(1)
PY
}
if [ "${R2E_SKIP_RL:-0}" != 1 ]; then
  torch_req="torch==2.13.0"
  trl_req="${R2E_TRL_REQ:-trl==1.16.0}"
  verl_req="${R2E_VERL_REQ:-verl==0.9.1}"
  verl_venv="${R2E_VERL_VENV:-/opt/r2e-verl}"
  # The system's kernels (TRL's transformers brings 0.19) breaks verl's older transformers at import.
  verl_kernels_req="kernels==0.12.3"
  if [ "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != 3.11 ]; then
    echo "skipping the RL trainers: torch 2.13.0's CPU build is for Python 3.11, python3 is another" >&2
  else
    rl_constraints="$(mktemp)"
    trap 'rm -f "$rl_constraints"' EXIT
    printf '%s\n' "$torch_req" "$trl_req" > "$rl_constraints"
    if ! rl_versions_ok python3 - "$torch_req" "$trl_req"; then
      echo "installing torch 2.13.0 (CPU) and the rl extra (TRL)"
      python3 -m pip install -q "$torch_req" 2>&1 | grep -v -E "^WARNING: (Location .* is ignored|Running pip as)" || true
      python3 -m pip install -q -c "$rl_constraints" -e ".[rl]" 2>&1 \
        | grep -v -E "^WARNING: (Location .* is ignored|Running pip as)" || true
      rl_versions_ok python3 - "$torch_req" "$trl_req" || { echo "the rl install did not give $torch_req $trl_req" >&2; exit 1; }
    fi
    if ! rl_versions_ok "$verl_venv/bin/python" - "$torch_req" "$verl_req" "$verl_kernels_req"; then
      echo "installing verl into $verl_venv (over the system site-packages)"
      [ -x "$verl_venv/bin/python" ] || python3 -m venv --system-site-packages "$verl_venv"
      printf '%s\n' "$torch_req" "$verl_req" > "$rl_constraints"
      "$verl_venv/bin/python" -m pip install -q -c "$rl_constraints" "$verl_req" "$verl_kernels_req" 2>&1 \
        | grep -v -E "^WARNING: (Location .* is ignored|Running pip as)" || true
      rl_versions_ok "$verl_venv/bin/python" - "$torch_req" "$verl_req" "$verl_kernels_req" \
        || { echo "the verl install did not give $torch_req $verl_req in $verl_venv" >&2; exit 1; }
    fi
  fi
fi

[ "${R2E_SKIP_DOCKER:-0}" = 1 ] && exit 0

# The base images were building meanwhile (started above); Harbor loads them into podman.
wait_base_images
[ "${R2E_SKIP_HARBOR:-0}" = 1 ] && exit 0
# Real Harbor (podman backend, Python 3.12 venv) for the tests that run tasks the way users will.
bash scripts/harbor_setup.sh
