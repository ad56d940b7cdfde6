"""Confirmation before consequential tools (finalize, send, mark paid, void, e-mail a payment reminder;
issue, send, void a credit note; record, reverse a payment; create, cancel an invoice schedule), however
the client can ask.

- A 2026-07-28 client that declared elicitation: the tool answers `InputRequiredResult` with the
  question (a form with one box); the client asks its person and calls again with the answer and
  the `requestState`. The SDK's `RequestStateBoundary` seals that state (AES-GCM under a key derived
  from the secret key, so any process can open it), binds it to the credential, the tool and its
  arguments, and lets it live 10 minutes; a nonce inside makes it good for one call, and the digest
  of what the question showed rides in it.
- A handshake-era client that declared elicitation: `elicitation/create` on the call's own stream
  (`ask_on_stream`, driven by the gate); the answer comes back in another POST, which may reach
  another process, so it goes through the database (`mcp_confirmations`).
- A client that shows MCP Apps but cannot be asked: the tool answers that the person must confirm,
  with a one-use token in `_meta` (not the model's context); the invoice view shows the question
  with Confirm and Cancel, which call the app-only tool `confirm_invoice_action` with the token.
- A client with neither: its granted scopes decide, and the host's own approval shows the arguments.

A "yes" approves what the question showed, not the call: the action checks the question's digest
under its own lock (`core.billing.confirmations`). When the invoice, its customer or the call
changed meanwhile, nothing happens and the person is asked again about the invoice as it is now
(or, where nobody can be asked now, the call is refused saying so). A call of a client that can be
asked, about which nothing was asked because it looked bound to fail, is checked the same way.

Declining or cancelling changes nothing and records nothing: the tool answers a plain result
saying so (structured `{"declined": true, …}`), not an error.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import anyio
import mcp.types as types
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import OctKey
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from sqlmodel import select
from starlette.concurrency import run_in_threadpool

from config.settings import get_settings
from core.access.principal import Principal
from core.base.clock import now
from core.base.db import transaction
from core.base.errors import ConfirmationStale
from core.billing.confirmations import NOTHING_ASKED, Confirmed
from core.mechanisms import single_use
from core.models import McpConfirmation
from mcp_server.clients import Traits, binding, traits_of
from operations.confirmations import ACTIONS, Question, confirmed, question_for

CONFIRM_TOOL = "confirm_invoice_action"
CONFIRM_REQUEST = "confirm"  # the key of the input request
STATE_PREFIX = "confirm:"
MAX_QUESTIONS = 3  # on one stream of a handshake-era call, when the invoice keeps changing under the question
LIFETIME = timedelta(minutes=10)  # of a question: its state, its app token, the wait for an answer
KEEP_ALIVE_SECONDS = 15.0
ANSWER_POLL_SECONDS = 0.2
PAST = {"finalize": "the invoice was not finalized", "send": "the invoice was not sent",
        "pay": "the invoice was not marked paid", "void": "the invoice was not voided",
        "credit": "no credit note was issued", "send_credit": "the credit note was not sent",
        "void_credit": "the credit note was not voided", "record_payment": "no payment was recorded",
        "reverse_payment": "the payment was not reversed", "schedule": "no invoice schedule was created",
        "cancel_schedule": "the invoice schedule was not cancelled", "remind": "no reminder was sent",
        "send_each": "no invoice was sent", "remind_each": "no reminder was sent"}

# Set by the gate on the request's scope.
PRINCIPAL = "invoicing.principal"
TRAITS = "invoicing.traits"
CONFIRMED = "invoicing.confirmed"  # the `Confirmed` of the question the gate asked on the call's stream


@dataclass(frozen=True)
class Proceed:
    """Act now, checking under the action's lock that it does what the person confirmed (`confirmed`);
    None: nothing is checked (a client that cannot be asked: its scopes decide)."""

    confirmed: Confirmed | None


def principal_of(ctx: ServerRequestContext) -> Principal | None:
    return ctx.request.scope.get(PRINCIPAL) if ctx.request is not None else None


def caller_as_authenticated(ctx: ServerRequestContext) -> Principal | None:
    """The caller as the gate authenticated this request, for the call to act as without looking the
    credential up again; None after the gate waited for a person's answer on the call's stream
    (minutes, in which the app may have been disconnected): the credential is verified again."""
    if ctx.request is None or CONFIRMED in ctx.request.scope:
        return None
    return ctx.request.scope.get(PRINCIPAL)


def bind_principal(ctx: ServerRequestContext) -> str | None:
    """Whose sealed `requestState` this is (RequestStateSecurity's binding): the credential."""
    principal = principal_of(ctx)
    return binding(principal) if principal is not None else None


def is_modern(ctx: ServerRequestContext) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def traits_for(ctx: ServerRequestContext) -> Traits:
    """What the client can do: declared with this request (2026-07-28) or in its session (handshake era)."""
    if is_modern(ctx):
        capabilities = ctx.session.client_capabilities
        return traits_of(capabilities.model_dump(by_alias=True, exclude_none=True) if capabilities else None)
    traits = ctx.request.scope.get(TRAITS) if ctx.request is not None else None
    return traits or Traits()


# --- results ----------------------------------------------------------------------------------------

ANSWERED = {"decline": "declined", "cancel": "dismissed the question", "timeout": "did not answer in time"}


def declined(tool: str, arguments: dict, answer: str = "decline") -> types.CallToolResult:
    """The person said no (`decline`), dismissed the question (`cancel`), or never answered (`timeout`)."""
    action = ACTIONS[tool]
    detail = (f"The person {ANSWERED.get(answer, 'declined')}: nothing changed ({PAST[action]}). Ask them before "
              "trying again.")
    invoice = arguments.get("invoice")  # a schedule's `invoice` is what it makes, not an invoice's id
    return types.CallToolResult(content=[types.TextContent(type="text", text=detail)], structured_content={
        "declined": True, "action": action, "invoice": invoice if isinstance(invoice, str) else None, "detail": detail})


CHANGED_NOTICE = "The invoice changed after the person was asked: nothing was done, and they are asked again."


def awaiting_app(question: Question, token: str, shown: Callable[[dict], dict], *,
                 again: bool = False) -> types.CallToolResult:
    """The question for the invoice view; `again` when an earlier answer was to an invoice that has changed since."""
    detail = (f"{CHANGED_NOTICE + ' ' if again else ''}Nothing has happened yet: the person must confirm in the "
              f"invoice view. It asks: {question.message}")
    structured = {"confirmation_required": True, "action": question.action, "invoice": question.invoice,
                  "question": question.message, "data": shown(question.view)}
    if again:
        structured["notice"] = CHANGED_NOTICE
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=detail)], structured_content=structured,
        meta={"invoicing": {"confirmation_token": token}})  # for the view only: not in the model's context


def refused(detail: str, code: str = "confirmation_invalid") -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(
        {"code": code, "detail": detail}))], is_error=True)


def changed(tool: str) -> types.CallToolResult:
    """Refused because what the person confirmed is no longer what would happen, and nobody can be asked now."""
    return refused(f"The invoice (or what goes with it) changed since the person was asked, or needs their "
                   f"word now: nothing happened ({PAST[ACTIONS[tool]]}). Call the tool "
                   f"again so they are asked about it as it is now.", code=ConfirmationStale.code)


def is_changed(result: dict) -> bool:
    """Whether a JSON-RPC `tools/call` result (as sent) is `changed`'s refusal."""
    if not isinstance(result, dict) or not result.get("isError"):
        return False
    texts = [block.get("text") for block in result.get("content") or [] if isinstance(block, dict)]
    try:
        return any(json.loads(text).get("code") == ConfirmationStale.code for text in texts if isinstance(text, str))
    except (ValueError, AttributeError):
        return False


# --- before a consequential tool acts ------------------------------------------------------------

async def before_acting(ctx: ServerRequestContext, tool: str, arguments: dict, params: types.CallToolRequestParams,
                        shown: Callable[[dict], dict]) -> types.CallToolResult | types.InputRequiredResult | Proceed:
    """What to answer instead of acting (a question, a decline, a refusal), or how to act now."""
    principal = principal_of(ctx)
    if principal is None:
        return Proceed(None)
    if (asked := ctx.request.scope.get(CONFIRMED)) is not None:
        return Proceed(asked)  # the gate asked on the call's stream and the person said yes
    traits = traits_for(ctx)
    if traits.elicitation and not is_modern(ctx):
        return Proceed(NOTHING_ASKED)  # a handshake-era client: the gate found nothing to ask
    if traits.elicitation and params.request_state is not None:
        return await _answered(tool, arguments, params)
    if traits.elicitation or traits.apps:
        return await ask_again(ctx, tool, arguments, shown, first=True) or Proceed(NOTHING_ASKED)
    return Proceed(None)


async def ask_again(ctx: ServerRequestContext, tool: str, arguments: dict, shown: Callable[[dict], dict], *,
                    in_view: bool = False, first: bool = False) -> types.CallToolResult | types.InputRequiredResult | None:
    """The question about the invoice as it is now, in the form this client takes it (None: nothing
    to ask, the action would fail): in the invoice view (where the view asked, or the client only
    shows views), as a round trip (2026-07-28), or, for a handshake-era client, the refusal the gate
    answers with another question on the call's stream."""
    principal = principal_of(ctx)
    question = await run_in_threadpool(question_for, tool, principal, arguments)
    if question is None:
        return None
    traits = traits_for(ctx)
    if question.items and not traits.elicitation:
        return changed(tool)  # a list is asked only where the person can be asked (the view shows one invoice)
    if in_view or (traits.apps and not traits.elicitation):
        return awaiting_app(question, app_token(principal, tool, arguments, question), shown, again=not first)
    if traits.elicitation and is_modern(ctx):
        return _input_required(question)
    return changed(tool)


def _input_required(question: Question) -> types.InputRequiredResult:
    state = f"{STATE_PREFIX}{secrets.token_urlsafe(16)}:{question.confirmed.digest}"
    return types.InputRequiredResult(
        input_requests={CONFIRM_REQUEST: types.ElicitRequest(params=types.ElicitRequestFormParams(
            message=question.message, requested_schema=question.requested_schema))},
        request_state=state)


async def _answered(tool: str, arguments: dict, params: types.CallToolRequestParams) -> types.CallToolResult | Proceed:
    """The second call of a 2026-07-28 round trip: the person's answer, with the state we sealed."""
    state = params.request_state  # as sealed by us: the boundary opened and checked it
    nonce, _, shown_digest = state.removeprefix(STATE_PREFIX).partition(":")
    if not state.startswith(STATE_PREFIX) or not nonce or not shown_digest:
        return refused("The confirmation is not one this server asked for.")
    if not await run_in_threadpool(single_use.spend, STATE_PREFIX + nonce, now() + LIFETIME):
        return refused("This confirmation was used already: ask the person again.")
    answer = (params.input_responses or {}).get(CONFIRM_REQUEST)
    if not isinstance(answer, types.ElicitResult):
        return refused("The answer to the confirmation is missing.")
    if not confirmed(answer.action, answer.content):
        return declined(tool, arguments, answer.action)
    return Proceed(Confirmed(shown_digest))


# --- the invoice view's Confirm and Cancel ---------------------------------------------------------

def _app_key() -> OctKey:
    return OctKey.import_key(hashlib.sha256(b"mcp-app-confirmation:" + get_settings().signing_key).digest())


def app_token(principal: Principal, tool: str, arguments: dict, question: Question) -> str:
    issued = int(time.time())
    claims = {"sub": binding(principal), "tool": tool, "arguments": arguments, "digest": question.confirmed.digest,
              "jti": secrets.token_urlsafe(16), "iat": issued, "exp": issued + int(LIFETIME.total_seconds())}
    return jwt.encode({"alg": "HS256"}, claims, _app_key())


async def from_app(ctx: ServerRequestContext, arguments: dict,
                   act: Callable[[str, dict, Confirmed], Awaitable[types.CallToolResult | types.InputRequiredResult]],
                   ) -> types.CallToolResult | types.InputRequiredResult:
    """`confirm_invoice_action`: run (or drop) exactly the action a token names, for its credential,
    once, if it still does what the person was shown."""
    principal, token, decision = principal_of(ctx), arguments.get("token"), arguments.get("decision")
    if decision not in ("confirm", "cancel") or not isinstance(token, str) or len(token) > 20000:
        return refused("`decision` must be confirm or cancel, with the `token` the invoice view was given.")
    try:
        claims = jwt.decode(token, _app_key(), algorithms=["HS256"]).claims
        jwt.JWTClaimsRegistry(now=int(time.time()), leeway=0, exp={"essential": True}).validate(claims)
    except (JoseError, ValueError, TypeError):
        return refused("The confirmation has expired or was altered: ask for it again.")
    if (principal is None or claims.get("sub") != binding(principal) or claims.get("tool") not in ACTIONS
            or not isinstance(claims.get("digest"), str) or not isinstance(claims.get("arguments"), dict)):
        return refused("The confirmation is not for this connection.")
    if not await run_in_threadpool(single_use.spend, "app:" + str(claims.get("jti")), now() + LIFETIME):
        return refused("This confirmation was used already.")
    if decision == "cancel":
        return declined(claims["tool"], claims["arguments"])
    return await act(claims["tool"], claims["arguments"], Confirmed(claims["digest"]))


# --- handshake era: the question on the call's own stream, the answer through the database -------

def open_question(question_id: str, owner: str) -> None:
    with transaction() as session:
        session.add(McpConfirmation(id=question_id, binding=owner, expires_at=now() + LIFETIME))


def record_answer(question_id: str, owner: str, answer: dict) -> bool:
    """Store a client's answer to one of our questions (from whichever process it reached)."""
    with transaction() as session:
        row = session.get(McpConfirmation, question_id)
        if row is None or row.binding != owner or row.answer is not None or row.expires_at <= now():
            return False
        row.answer = answer
        session.add(row)
    return True


def _answer(question_id: str) -> dict | None:
    with transaction() as session:
        row = session.exec(select(McpConfirmation).where(McpConfirmation.id == question_id)).first()
        return row.answer if row is not None else None


def forget(question_id: str) -> None:
    with transaction() as session:
        if (row := session.get(McpConfirmation, question_id)) is not None:
            session.delete(row)


async def wait_for_answer(question_id: str, keep_alive: Callable[[], Awaitable[None]]) -> dict | None:
    """The answer, or None when none came in time."""
    deadline, next_keep_alive = time.monotonic() + LIFETIME.total_seconds(), time.monotonic() + KEEP_ALIVE_SECONDS
    while time.monotonic() < deadline:
        if (answer := await run_in_threadpool(_answer, question_id)) is not None:
            return answer
        if time.monotonic() >= next_keep_alive:
            await keep_alive()
            next_keep_alive = time.monotonic() + KEEP_ALIVE_SECONDS
        await anyio.sleep(ANSWER_POLL_SECONDS)
    return None


def elicitation_request(question_id: str, question: Question) -> dict:
    return {"jsonrpc": "2.0", "id": question_id, "method": "elicitation/create", "params": {
        "mode": "form", "message": question.message, "requestedSchema": question.requested_schema}}


def answer_confirms(answer: dict | None) -> tuple[bool, str]:
    """Whether a JSON-RPC answer to `elicitation/create` approves, and its action."""
    if answer is None:
        return False, "timeout"
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, dict):
        return False, "cancel"  # the client answered with an error: the question was not put
    action = result.get("action") if result.get("action") in ("accept", "decline", "cancel") else "cancel"
    content = result.get("content") if isinstance(result.get("content"), dict) else None
    return confirmed(action, content), action
