from datetime import timedelta

import pytest

from homecluster.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    "text, expected",
    [
        ("90s", timedelta(seconds=90)),
        ("12m10s", timedelta(minutes=12, seconds=10)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("0s", timedelta(0)),
        ("1.5s", timedelta(seconds=1.5)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_parse(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "10", "-5s", "5 m", "1d", "m5", "5sec", None, 5])
def test_parse_rejects(text):
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize("delta", [timedelta(0), timedelta(seconds=90), timedelta(minutes=12, seconds=10),
                                   timedelta(hours=2), timedelta(milliseconds=1500)])
def test_round_trip(delta):
    assert parse_duration(format_duration(delta)) == delta


def test_format_shapes():
    assert format_duration(timedelta(minutes=12, seconds=10)) == "12m10s"
    assert format_duration(timedelta(hours=1)) == "1h"


def test_a_duration_past_the_ceiling_reads_as_the_ceiling_instead_of_overflowing():
    from homecluster.limits import DURATION_CEILING

    assert parse_duration("100000000h") == DURATION_CEILING
    assert parse_duration("1" + "0" * 400 + "h") == DURATION_CEILING  # a float overflow to inf
    assert parse_duration("876000h") == DURATION_CEILING  # exactly 100 years
