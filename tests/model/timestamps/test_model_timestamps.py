"""RFC 3339 strings <-> aware UTC datetimes."""
from datetime import datetime, timedelta, timezone

import pytest

from homecluster.model.timestamps import TimestampError, format_time, parse_time

UTC = timezone.utc


@pytest.mark.parametrize("text, expected", [
    ("2026-03-04T09:38:15Z", datetime(2026, 3, 4, 9, 38, 15, tzinfo=UTC)),
    ("2026-03-04T09:38:15.250000Z", datetime(2026, 3, 4, 9, 38, 15, 250000, tzinfo=UTC)),
    ("2026-03-04T10:38:15+01:00", datetime(2026, 3, 4, 9, 38, 15, tzinfo=UTC)),
    ("2026-03-04t09:38:15z", datetime(2026, 3, 4, 9, 38, 15, tzinfo=UTC)),
])
def test_parse(text, expected):
    got = parse_time(text)
    assert got == expected and got.tzinfo == UTC


@pytest.mark.parametrize("value", [None, ""])
def test_absent_is_none(value):
    assert parse_time(value) is None


@pytest.mark.parametrize("value", ["2026-03-04T09:38:15", "2026-03-04", "yesterday", 1741080000])
def test_rejects_zoneless_and_junk_naming_the_field(value):
    with pytest.raises(TimestampError, match="spec.deadlineAt"):
        parse_time(value, field="spec.deadlineAt")


def test_aware_datetimes_pass_through_as_utc():
    plus2 = timezone(timedelta(hours=2))
    assert parse_time(datetime(2026, 3, 4, 11, 0, tzinfo=plus2)) == datetime(2026, 3, 4, 9, 0, tzinfo=UTC)
    with pytest.raises(TimestampError, match="naive"):
        parse_time(datetime(2026, 3, 4, 11, 0))


def test_format_is_utc_seconds_z():
    assert format_time(datetime(2026, 3, 4, 9, 38, 15, 999999, tzinfo=UTC)) == "2026-03-04T09:38:15Z"
    assert format_time(datetime(2026, 3, 4, 10, 38, 15, tzinfo=timezone(timedelta(hours=1)))) == "2026-03-04T09:38:15Z"
    with pytest.raises(TimestampError):
        format_time(datetime(2026, 3, 4))


def test_round_trip():
    moment = datetime(2026, 3, 4, 9, 38, 15, tzinfo=UTC)
    assert parse_time(format_time(moment)) == moment
