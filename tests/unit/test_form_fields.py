"""The token endpoint's form reader (`authz.adapter.urlencoded_fields`) reads any body as Starlette's form
parser does (python-multipart), which it stands in for on the hot path."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.exceptions import HTTPException
from starlette.requests import Request

from authz.adapter import MAX_FORM_FIELDS, urlencoded_fields
from tests import hostile

PIECES = [b"a", b"b", b"=", b"&", b"+", b"%2F", b"%C3%A9", b"%Z", b"%", b" ", b"\xe9", b";", b"\x00", b"&&", b"==",
          b"grant_type", b"refresh_token"]


def starlette_fields(body: bytes) -> list[tuple[str, str]]:
    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def read():
        request = Request({"type": "http", "method": "POST", "app": None,
                           "headers": [(b"content-type", b"application/x-www-form-urlencoded")]}, receive)
        return list((await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)).multi_items())
    return asyncio.run(read())


@settings(max_examples=hostile.EXAMPLES * 50, deadline=None, database=None, derandomize=True)
@given(st.lists(st.sampled_from(PIECES), max_size=16))
def test_any_body_reads_as_starlettes_form_parser_reads_it(pieces):
    body = b"".join(pieces)
    assert urlencoded_fields(body) == starlette_fields(body)


def test_more_fields_than_allowed_are_refused_as_starlette_refuses_them():
    body = b"&".join(b"f%d=1" % n for n in range(MAX_FORM_FIELDS + 1))
    with pytest.raises(HTTPException) as ours:
        urlencoded_fields(body)
    with pytest.raises(HTTPException) as theirs:
        starlette_fields(body)
    assert (ours.value.status_code, ours.value.detail) == (theirs.value.status_code, theirs.value.detail)
    assert len(urlencoded_fields(body.rsplit(b"&", 1)[0])) == MAX_FORM_FIELDS
