#!/usr/bin/env bash
# Idempotent set-up for running repo2rlenv's tasks in real Harbor with its podman backend (DESIGN §6,
# "Real Harbor on such a machine"). Run as root on Debian, after scripts/dev_setup.sh (which starts
# dockerd and builds the base image this script hands to podman).
#
# Why podman: Harbor's Docker backend calls `docker compose` v2, which Debian does not ship; its podman
# backend drives podman-compose instead. Why a separate venv: Harbor needs Python >= 3.12, while the
# project itself runs on the machine's 3.11.
#
#   bash scripts/harbor_setup.sh
#   R2E_HARBOR_VENV=/some/dir bash scripts/harbor_setup.sh     # venv elsewhere (default /opt/r2e-harbor)
#   R2E_HARBOR_REQ='harbor==0.26.0' bash scripts/harbor_setup.sh  # another Harbor version
#
# Afterwards: PATH="$R2E_HARBOR_VENV/bin:$PATH" LITELLM_LOCAL_MODEL_COST_MAP=True harbor run -e podman ...
set -euo pipefail
# litellm (imported by this package's model paths and by Harbor) fetches a price table over the network
# at import unless told to use its bundled copy: without this, set-up prints its download retries.
export LITELLM_LOCAL_MODEL_COST_MAP=True
cd "$(dirname "$0")/.."

venv="${R2E_HARBOR_VENV:-/opt/r2e-harbor}"
# The version the tests were written against; Harbor's task format and CLI move quickly.
harbor_req="${R2E_HARBOR_REQ:-harbor>=0.26,<0.27}"
compose_req="podman-compose>=1.1"
conf=/etc/containers/containers.conf

die() { echo "harbor_setup.sh: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. podman itself (Debian's). Its bundled podman-compose 1.0.3 is too old, so that comes from pip below.
if command -v podman >/dev/null; then
  echo "podman present: $(podman --version)"
else
  echo "installing podman (apt-get)"
  as_root apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq podman >/dev/null \
    || die "apt-get install podman failed"
  command -v podman >/dev/null || die "podman still not on PATH after installing it"
fi

# 2. A Python 3.12 venv with Harbor and a recent podman-compose.
find_python312() {
  local candidate
  for candidate in /root/.pyenv/versions/3.12*/bin/python; do
    [ -x "$candidate" ] && { echo "$candidate"; return 0; }
  done
  command -v python3.12 || return 1
}
venv_ok() {
  [ -x "$venv/bin/python" ] && [ -x "$venv/bin/harbor" ] && [ -x "$venv/bin/podman-compose" ] \
    && "$venv/bin/python" - "$harbor_req" "$compose_req" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
from packaging.requirements import Requirement

for text in sys.argv[1:]:
    req = Requirement(text)
    if not req.specifier.contains(version(req.name), prereleases=True):
        sys.exit(1)
PY
}
if venv_ok; then
  echo "Harbor venv ready at $venv: $("$venv/bin/harbor" --version 2>/dev/null | tail -1)"
else
  if [ ! -x "$venv/bin/python" ]; then
    py=$(find_python312) || die "no Python 3.12 found (pyenv's /root/.pyenv/versions/3.12*, or python3.12 on PATH)"
    echo "creating the Harbor venv at $venv with $py"
    "$py" -m venv "$venv" || die "could not create a venv at $venv"
  fi
  echo "installing '$harbor_req' and '$compose_req' into $venv (a few minutes the first time)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$harbor_req" "$compose_req" 2>&1 \
    | grep -v -E "^WARNING: Location .* is ignored" || true
  venv_ok || die "Harbor or podman-compose missing or at the wrong version in $venv after pip install"
  echo "Harbor venv ready at $venv"
fi

# 3. podman's default rlimits are refused on this kind of machine; set ones it accepts, system-wide,
#    keeping every other setting of an existing containers.conf.
as_root mkdir -p "$(dirname "$conf")"
as_root python3 - "$conf" <<'PY' || die "could not set default_ulimits in $conf"
"""Set [containers] default_ulimits in containers.conf, changing nothing else in the file."""
import re
import sys
import tomllib
from pathlib import Path

WANT = ["nofile=16384:16384", "nproc=8192:8192"]
LINE = 'default_ulimits = ["nofile=16384:16384", "nproc=8192:8192"]'
path = Path(sys.argv[1])
text = path.read_text() if path.exists() else ""
before = tomllib.loads(text)
if before.get("containers", {}).get("default_ulimits") == WANT:
    print(f"{path}: default_ulimits already set")
    sys.exit(0)

lines = text.splitlines()
out, section, skipping, inserted = [], None, False, False
for line in lines:
    if skipping:  # the rest of a multi-line default_ulimits array we are replacing
        skipping = "]" not in line
        continue
    header = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
    if header:
        section = header.group(1).strip()
        out.append(line)
        if section == "containers":
            out.append(LINE)
            inserted = True
        continue
    if section == "containers" and re.match(r"\s*default_ulimits\s*=", line):
        skipping = "]" not in line.split("=", 1)[1]
        continue
    out.append(line)
if not inserted:
    out += ["", "[containers]", LINE]
new = "\n".join(out).lstrip("\n") + "\n"

after = tomllib.loads(new)  # refuse to write anything that changed more than the one key
if after.get("containers", {}).pop("default_ulimits", None) != WANT:
    sys.exit("edit did not produce the wanted default_ulimits")
before.get("containers", {}).pop("default_ulimits", None)
if not before.get("containers"):
    before.pop("containers", None)
if not after.get("containers"):
    after.pop("containers", None)
if after != before:
    sys.exit("edit would change other settings")
path.write_text(new)
print(f"{path}: set [containers] {LINE}")
PY

# 4. The base images task Dockerfiles start FROM, in podman's own store (podman cannot see Docker's):
#    trixie too, for tasks of repos whose requires-python picked it.
base="${R2E_BASE_IMAGE:-repo2rlenv-base:bookworm}"
for suite in bookworm trixie; do
  image="repo2rlenv-base:$suite"
  [ "$suite" = bookworm ] && image="$base"
  echo "handing the base image $image to podman"
  bash scripts/build_base_image.sh --suite "$suite" --tag "$image" --podman \
    || die "scripts/build_base_image.sh --podman failed (is dockerd running? run scripts/dev_setup.sh first)"
  podman image exists "$image" || die "base image $image not in podman's store"
done

# 5. A smoke test of the whole chain podman needs here (rlimits, storage, the image).
podman run --rm --network none "$base" /opt/venv/bin/python -c "import pytest" \
  || die "podman cannot run the base image (check $conf and 'podman info')"
echo "Harbor with podman is ready: PATH=\"$venv/bin:\$PATH\" LITELLM_LOCAL_MODEL_COST_MAP=True harbor run -e podman ..."
