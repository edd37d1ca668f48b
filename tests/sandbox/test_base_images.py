"""The base images scripts/build_base_image.sh makes: the Python the discovery table promises, and the
system files test suites assume a Debian system has (time zones, locales, a pager, /etc/services)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repo2rlenv.discovery.python import BASE_IMAGES
from repo2rlenv.sandbox import kernel_ext

PROBE = """\
import locale, os, shutil, socket, sys, zoneinfo
zoneinfo.ZoneInfo("Europe/Paris")
locale.setlocale(locale.LC_ALL, "en_US.UTF-8")
locale.setlocale(locale.LC_ALL, "C.UTF-8")
assert shutil.which("less") and shutil.which("git")
assert socket.getservbyname("http") == 80
import pytest, coverage
print("%d.%d.%d" % sys.version_info[:3])
"""

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build_base_image.sh"


def current_recipe() -> str:
    """The stamp the build script puts on an image: its recipe number (read from the script, so a bump there
    needs no edit here) and the first 12 hex digits of the kernel extension's source hash."""
    found = re.search(r"^recipe=(\d+)$", SCRIPT.read_text(), re.MULTILINE)
    assert found, f"{SCRIPT} no longer sets recipe=N"
    return f"{found.group(1)}-{kernel_ext.source_stamp()}"


@pytest.mark.slow
@pytest.mark.parametrize("image", BASE_IMAGES, ids=[b.suite for b in BASE_IMAGES])
def test_each_base_image_has_its_python_and_the_system_files_suites_expect(image, docker_ready):
    import docker

    client = docker.from_env()
    recipe = (client.images.get(image.tag).labels or {}).get("repo2rlenv.base-recipe")
    # An image from an older recipe lacks what the recipe now puts in (or takes out): rebuilding it is the fix.
    assert recipe == current_recipe(), f"{image.tag} is from an older recipe; run scripts/build_base_image.sh --suite {image.suite}"
    out = client.containers.run(image.tag, ["/opt/venv/bin/python", "-c", PROBE], remove=True, network_mode="none")
    assert out.decode().strip() == image.python
