"""An assistant connects the way a real one does: the official SDK's OAuthClientProvider learns from
the 401 of /mcp where to authorize, identifies itself (dynamic registration, or a client metadata
document served over https with a test CA), sends the user through the consent page (driven here
with a signed-in browser), gets a token for {origin}/mcp, calls tools, and steps up to
invoices:finalize when the server answers 403 insufficient_scope. On both protocol generations."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.conftest import make_tenant
from tests.oauth_flow import REDIRECT_URI, offered_scopes, sign_in, submit_consent, ticked_scopes

pytestmark = pytest.mark.e2e
GENERATIONS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def live_server(documents_origin) -> str:
    """One server for the module, trusting the test CA of the document server."""
    return documents_origin


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class ConsentingUser:
    """Plays the person at the browser: allows the pre-ticked permissions, plus `extra` ones."""

    def __init__(self, origin: str, email: str) -> None:
        self.browser = httpx.Client(base_url=origin, timeout=15)
        sign_in(self.browser, email)
        self.extra: set[str] = set()
        self.pages: list[list[str]] = []
        self.page_texts: list[str] = []
        self.result: AuthorizationCodeResult | None = None

    async def open(self, authorization_url: str) -> None:
        self.result = await anyio.to_thread.run_sync(self._consent, authorization_url)

    def _consent(self, authorization_url: str) -> AuthorizationCodeResult:
        page = self.browser.get(authorization_url)
        offered = offered_scopes(page.text)
        self.pages.append(offered)
        self.page_texts.append(page.text)
        chosen = [s for s in offered if s in set(ticked_scopes(page.text)) | self.extra]
        answer = submit_consent(self.browser, authorization_url, scopes=chosen)
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                       iss=query.get("iss", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def connect(origin: str, user: ConsentingUser, storage: MemoryStorage, generation: str = GENERATIONS[0],
            client_metadata_url: str | None = None):
    provider = OAuthClientProvider(
        f"{origin}/mcp",
        OAuthClientMetadata(client_name="Test Assistant", redirect_uris=[REDIRECT_URI],
                            token_endpoint_auth_method="none"),
        storage, redirect_handler=user.open, callback_handler=user.callback, client_metadata_url=client_metadata_url)

    async def run(work):
        async with create_mcp_http_client(auth=provider) as http:
            transport = streamable_http_client(f"{origin}/mcp", http_client=http)
            if generation == "2026-07-28":
                async with Client(transport, mode=generation) as client:
                    return await work(client)
            async with transport as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)
    return run


@pytest.mark.parametrize("generation", GENERATIONS)
def test_an_assistant_authorizes_from_the_401_and_steps_up_to_finalize(live_server, generation):
    tenant = make_tenant(None)
    user, storage = ConsentingUser(live_server, tenant.user_email), MemoryStorage()

    async def drafting(session):
        customer = await session.call_tool("create_customer", {"name": "Jane Doe"})
        draft = await session.call_tool("create_invoice", {"customer": customer.structured_content["id"],
                                                           "items": [{"description": "Work", "unit_amount": 100}]})
        assert not draft.is_error, draft
        return draft.structured_content["id"]

    invoice_id = anyio.run(connect(live_server, user, storage, generation), drafting)
    assert storage.client is not None and storage.tokens is not None
    assert "invoices:finalize" not in (storage.tokens.scope or "").split()

    user.extra = {"invoices:finalize"}

    async def finalizing(session):
        return await session.call_tool("finalize_invoice", {"invoice": invoice_id})

    finalized = anyio.run(connect(live_server, user, storage, generation), finalizing)
    assert not finalized.is_error, finalized
    assert finalized.structured_content["status"] == "open"
    assert len(user.pages) == 2  # the first consent, then the step-up
    assert "invoices:finalize" in storage.tokens.scope.split()


def test_events_of_an_oauth_app_name_the_app(live_server):
    from tests.api.invoicing import stored_events

    tenant = make_tenant(None)
    user, storage = ConsentingUser(live_server, tenant.user_email), MemoryStorage()

    async def work(session):
        customer = await session.call_tool("create_customer", {"name": "Jane Doe"})
        return await session.call_tool("create_invoice", {"customer": customer.structured_content["id"]})

    anyio.run(connect(live_server, user, storage), work)
    (event,) = stored_events(tenant.account_id)
    assert event.meta["actor"] == "oauth_app"
    assert event.meta["client_id"] == storage.client.client_id
    assert event.meta["client_name"] == "Test Assistant"
    assert event.meta["request_id"].startswith("req_")


@pytest.mark.parametrize("generation", GENERATIONS)
def test_an_assistant_identified_by_a_client_metadata_document(live_server, documents, generation):
    tenant = make_tenant(None)
    user, storage = ConsentingUser(live_server, tenant.user_email), MemoryStorage()
    client_id = documents.publish(f"/assistant-{generation}.json")

    async def work(session):
        return await session.call_tool("get_business", {})

    result = anyio.run(connect(live_server, user, storage, generation, client_metadata_url=client_id), work)
    assert not result.is_error, result
    assert storage.client.client_id == client_id
    assert "Verified app" in user.page_texts[0] and "Verified Assistant" in user.page_texts[0]
