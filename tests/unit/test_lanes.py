"""What the fast lanes share (`operations.lanes`) and which requests each lane takes: a body is the
lane's only when it came whole, and the application then reads what was read as it came; a request
whose headers only the full stack reads (chunked, a length repeated or malformed, a content type
given twice) is never a lane's."""

from __future__ import annotations

import asyncio

import pytest

from asgi.lanes import declared_length, read_body
from authz import fast_refresh
from rest import fast_writes

FORM = b"application/x-www-form-urlencoded"


def _receive(*messages):
    pending = list(messages)

    async def receive():
        return pending.pop(0) if pending else {"type": "http.disconnect"}
    return receive


def _read(length: int, *messages) -> tuple[bytes | None, list]:
    async def run():
        body, receive = await read_body(_receive(*messages), length)
        return body, [await receive() for _ in range(len(messages) + 1)]
    return asyncio.run(run())


def test_a_whole_body_is_read_and_given_again_as_it_came():
    parts = [{"type": "http.request", "body": b"ab", "more_body": True},
             {"type": "http.request", "body": b"cd", "more_body": False}]
    body, again = _read(4, *parts)
    assert body == b"abcd"
    assert again == [*parts, {"type": "http.disconnect"}]


def test_a_client_that_leaves_mid_body_gives_no_body_and_the_application_meets_the_disconnect():
    parts = [{"type": "http.request", "body": b"grant_type=refresh_token&client_id=C", "more_body": True},
             {"type": "http.disconnect"}]
    body, again = _read(80, *parts)
    assert body is None
    assert again[:2] == parts


def test_a_body_longer_or_shorter_than_declared_is_none():
    assert _read(2, {"type": "http.request", "body": b"abc", "more_body": False})[0] is None
    assert _read(4, {"type": "http.request", "body": b"abc", "more_body": False})[0] is None


def _scope(path: str, *headers: tuple[bytes, bytes], query: bytes = b"") -> dict:
    return {"type": "http", "method": "POST", "path": path, "root_path": "", "query_string": query,
            "headers": list(headers)}


@pytest.mark.parametrize(("headers", "expected"), [
    ((), 0),
    (((b"content-length", b"12"),), 12),
    (((b"content-length", b"12"), (b"content-length", b"12")), None),
    (((b"content-length", b"-1"),), None),
    (((b"content-length", b"1e3"),), None),
    (((b"transfer-encoding", b"chunked"),), None),
])
def test_the_declared_length(headers, expected):
    assert declared_length(_scope("/", *headers)) == expected


def test_the_refresh_lane_takes_a_small_form_only():
    form = (b"content-type", FORM)
    assert fast_refresh.lane_target(_scope("/oauth/token", form, (b"content-length", b"99"))) == 99
    for headers in [(form,), (form, (b"content-length", b"2000")), (form, (b"transfer-encoding", b"chunked")),
                    (form, (b"content-length", b"9"), (b"content-length", b"9")),
                    ((b"content-type", b"application/json"), form, (b"content-length", b"9")),
                    (form, (b"content-length", b"9"), (b"authorization", b"Basic eDp5")),
                    (form, (b"content-length", b"9"), (b"origin", b"https://app.example"))]:
        assert fast_refresh.lane_target(_scope("/oauth/token", *headers)) is None, headers
    assert fast_refresh.lane_target(_scope("/oauth/token", form, (b"content-length", b"9"), query=b"a=1")) is None


def test_the_refresh_lane_leaves_a_client_identified_by_a_metadata_document():
    assert fast_refresh._plain_refresh(b"grant_type=refresh_token&refresh_token=inv_ort_x&client_id=C") is not None
    assert fast_refresh._plain_refresh(b"grant_type=refresh_token&refresh_token=inv_ort_x"
                                       b"&client_id=https%3A%2F%2Fapp.example%2Fclient.json") is None


def test_the_write_lane_takes_the_two_writes_with_a_body_the_api_accepts():
    length = (b"content-length", b"10")
    created = fast_writes.lane_target(_scope("/api/v1/invoices", length))
    assert (created.operation.name, created.params, created.length) == ("create_invoice", {}, 10)
    finalized = fast_writes.lane_target(_scope("/api/v1/invoices/in_1/finalize"))
    assert (finalized.operation.name, finalized.params, finalized.length) == ("finalize_invoice", {"id": "in_1"}, 0)
    for path in ["/api/v1/invoices/in_1", "/api/v1/invoices//finalize", "/api/v1/invoices/a/b/finalize"]:
        assert fast_writes.lane_target(_scope(path, length)) is None, path
    assert fast_writes.lane_target(_scope("/api/v1/invoices", length, length)) is None
    assert fast_writes.lane_target(_scope("/api/v1/invoices", (b"content-length", b"99999999999"))) is None


def test_a_request_a_lane_leaves_keeps_the_id_the_lane_gave_it():
    from service import observability
    scope = {"type": "http", "headers": []}
    given = observability.begin(scope).request_id
    assert observability.begin(scope).request_id == given  # the stack's own begin, after the lane's
    supplied = {"type": "http", "headers": [(b"x-request-id", b"mine-7")]}
    assert observability.begin(supplied).request_id == observability.begin(supplied).request_id == "mine-7"
