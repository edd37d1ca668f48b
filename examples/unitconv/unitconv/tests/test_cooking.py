import pytest

from unitconv.cooking import cups_to_ml, round_to_step, scale_recipe


def test_cups():
    assert cups_to_ml(1) == 240


def test_round_to_step():
    assert round_to_step(1.1) == 1.0


def test_scale_recipe(pancakes):
    scaled = scale_recipe(pancakes, 8)
    assert set(scaled) == set(pancakes)
    with pytest.raises(ValueError):
        scale_recipe(pancakes, 0)
