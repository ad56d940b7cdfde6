"""A live server (and a worker for webhook deliveries, mailing the test SMTP server) for the tests
of the Python client library and its command line, which talk HTTP to it as users' programs do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import make_tenant
from tests.e2e.conftest import LiveServers, hooks, mailbox  # noqa: F401 (fixtures)


@pytest.fixture(scope="module")
def origin(test_settings, tmp_path_factory, mailbox) -> Iterator[str]:  # noqa: F811
    servers = LiveServers(test_settings, tmp_path_factory.mktemp("client-server"))
    origin = servers(SMTP_URL=mailbox[1])
    servers.start_worker(SMTP_URL=mailbox[1])
    yield origin
    servers.stop_all()


@pytest.fixture
def account():
    """An account with a business profile and an API key of every scope."""
    return make_tenant(None)
