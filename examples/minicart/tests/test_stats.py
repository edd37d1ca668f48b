"""Tests for minicart.stats."""

import pytest

from minicart.stats import clamp, histogram, mean, median, moving_average, percentile

TOTALS = [12.0, 5.0, 30.0, 8.0, 20.0, 15.0, 9.0, 41.0, 3.0, 27.0]


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


@pytest.mark.parametrize(("values", "expected"), [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([7], 7)])
def test_median(values, expected):
    assert median(values) == expected


@pytest.mark.parametrize(("p", "expected"), [(50, 12.0), (90, 30.0), (100, 41.0), (25, 8.0)])
def test_percentile_nearest_rank(p, expected):
    assert percentile(TOTALS, p) == expected


def test_percentile_out_of_range():
    with pytest.raises(ValueError):
        percentile(TOTALS, 150)


@pytest.mark.parametrize(("value", "expected"), [(-3, 0), (5, 5), (12, 10)])
def test_clamp(value, expected):
    assert clamp(value, 0, 10) == expected


def test_clamp_rejects_empty_range():
    with pytest.raises(ValueError):
        clamp(1, 5, 2)


def test_moving_average():
    assert moving_average([1, 2, 3, 4, 5], 2) == [1.5, 2.5, 3.5, 4.5]
    assert moving_average([2, 4, 6], 3) == [4.0]


def test_moving_average_needs_positive_window():
    with pytest.raises(ValueError):
        moving_average([1, 2], 0)


def test_histogram_buckets():
    counts = histogram([1, 12, 15, 27], 10)
    assert len(counts) == 3
