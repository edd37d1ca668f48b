"""The base image from requires-python, and --base-image over it."""

from __future__ import annotations

import pytest

from repo2rlenv.discovery.python import BASE_IMAGES, choose_python


@pytest.mark.parametrize("requires,image,satisfied", [
    (None, "repo2rlenv-base:bookworm", True),
    ((">=3.9", "w"), "repo2rlenv-base:bookworm", True),
    ((">=3.12", "w"), "repo2rlenv-base:trixie", True),
    ((">=3.11.4", "w"), "repo2rlenv-base:trixie", True),  # bookworm ships 3.11.2
    (("~=3.13", "w"), "repo2rlenv-base:trixie", True),
    (("<3.10", "w"), "repo2rlenv-base:bookworm", False),
    (("^3.8", "w"), "repo2rlenv-base:bookworm", True),  # a poetry range, not a specifier: default
])
def test_the_oldest_image_that_satisfies_wins(requires, image, satisfied):
    choice = choose_python(requires)
    assert (choice.image, choice.satisfied) == (image, satisfied)


def test_an_explicit_base_image_always_wins():
    choice = choose_python((">=3.12", "w"), "my-image:1")
    assert (choice.image, choice.python, choice.reason) == ("my-image:1", "unknown", "--base-image")
    assert choose_python(None, "repo2rlenv-base:trixie").python == "3.13.5"


def test_the_image_table_is_oldest_first_and_unique():
    versions = [tuple(map(int, b.python.split("."))) for b in BASE_IMAGES]
    assert versions == sorted(versions) and len({b.tag for b in BASE_IMAGES}) == len(BASE_IMAGES)
