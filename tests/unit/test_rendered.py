"""The invoices' JSON the fast read keeps (`invoice_reads.Rendered`): found only under its stamp,
bounded in bytes, the least recently read dropped first."""

from core.billing.invoice_reads import Rendered

STAMP = ("2026-11-26", "http://127.0.0.1:8000")


def test_what_was_kept_is_found_under_its_stamp_only():
    rendered = Rendered(limit=100)
    rendered.keep("a", "v1", STAMP, b"{}")
    assert rendered.kept(["a"], ["v1"], STAMP) == [b"{}"]
    assert rendered.kept(["a"], ["v1"], ("2026-11-27", STAMP[1])) == [None]
    assert rendered.kept(["b"], ["v1"], STAMP) == [None]


def test_a_newer_version_replaces_the_older():
    rendered = Rendered(limit=100)
    rendered.keep("a", "v1", STAMP, b"1234")
    rendered.keep("a", "v2", STAMP, b"12")
    assert rendered.kept(["a", "a"], ["v2", "v1"], STAMP) == [b"12", None] and rendered.size == 2


def test_the_least_recently_read_goes_first_when_the_bytes_exceed_the_limit():
    rendered = Rendered(limit=10)
    rendered.keep("a", "v", STAMP, b"1234")
    rendered.keep("b", "v", STAMP, b"1234")
    rendered.kept(["a"], ["v"], STAMP)
    rendered.keep("c", "v", STAMP, b"1234")
    assert rendered.kept(["b", "a", "c"], ["v"] * 3, STAMP) == [None, b"1234", b"1234"]
    assert rendered.size == 8


def test_json_larger_than_the_limit_is_not_kept():
    rendered = Rendered(limit=3)
    rendered.keep("a", "v", STAMP, b"1234")
    assert rendered.kept(["a"], ["v"], STAMP) == [None] and rendered.size == 0


def test_each_invoice_is_found_under_its_version_only():
    rendered = Rendered(limit=100)
    rendered.keep("a", "v1", STAMP, b"A")
    rendered.keep("b", "v1", STAMP, b"B")
    assert rendered.kept(["a", "b", "c"], ["v1", "v2", "v1"], STAMP) == [b"A", None, None]
    assert rendered.kept(["a"], ["v1"], ("another day", STAMP[1])) == [None]
