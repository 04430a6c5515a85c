"""activebayes.data.plausible.constant_value: hand-worked cases at the edge of its rule."""

import math

import pytest

from activebayes.data.plausible import SAME, constant_value


@pytest.mark.parametrize(
    "labels, expected",
    [
        ([3.0, 3.0, 3.0], 3.0),
        ([0.0, 0.0], 0.0),  # a spread of zero is constant at zero too
        ([-2.5, -2.5, math.nan, math.inf], -2.5),  # only the finite labels count
        ([1e6, 1e6 + 0.5e6 * SAME], 1e6),  # max − min is half of SAME · max|L|: constant
        ([1e6, 1e6 + 3e6 * SAME], None),  # three times the edge: varies
        ([0.0, 1e-300], None),  # any spread around zero varies
        ([3.0, 4.0], None),
        ([3.0], None),  # one label says nothing yet
        ([], None),
        ([math.nan, 5.0], None),
    ],
)
def test_constant_value(labels, expected):
    assert constant_value(labels) == expected


def test_constant_value_reads_label_texts():
    assert constant_value(["7", "7.0", "7e0"]) == 7.0
