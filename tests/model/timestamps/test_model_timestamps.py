"""RFC 3339 strings <-> aware UTC datetimes."""
from datetime import datetime, timedelta, timezone, tzinfo

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


@pytest.fixture
def far_from_utc(monkeypatch):
    """The process's local zone set to one far from UTC (+05:30), restored afterwards."""
    import time
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_times_are_utc_whatever_the_machines_zone(far_from_utc):
    plus1 = timezone(timedelta(hours=1))
    got = parse_time("2026-03-04T10:38:15+01:00")
    assert got.utcoffset() == timedelta(0)
    assert parse_time(datetime(2026, 3, 4, 10, 38, 15, tzinfo=plus1)).utcoffset() == timedelta(0)
    assert format_time(datetime(2026, 3, 4, 10, 38, 15, tzinfo=plus1)) == "2026-03-04T09:38:15Z"


def test_without_a_field_name_the_error_says_timestamp():
    with pytest.raises(TimestampError) as err:
        parse_time("yesterday")
    assert str(err.value).startswith("timestamp: 'yesterday' is not an RFC 3339 timestamp")
    with pytest.raises(TimestampError) as err:
        format_time(datetime(2026, 3, 4))
    assert str(err.value).startswith("timestamp: naive datetime")


def test_a_naive_datetime_is_refused_naming_the_field():
    with pytest.raises(TimestampError) as err:
        parse_time(datetime(2026, 3, 4, 11, 0), field="status.readyAt")
    assert str(err.value).startswith("status.readyAt: naive datetime")


class _NoOffset(tzinfo):
    """A zone that knows no offset: Python counts a datetime in it as naive."""

    def utcoffset(self, dt):
        return None

    def dst(self, dt):
        return None

    def tzname(self, dt):
        return None


def test_a_datetime_whose_zone_gives_no_offset_is_naive():
    with pytest.raises(TimestampError, match="naive"):
        parse_time(datetime(2026, 3, 4, 11, 0, tzinfo=_NoOffset()))
    with pytest.raises(TimestampError, match="naive"):
        format_time(datetime(2026, 3, 4, 11, 0, tzinfo=_NoOffset()))
