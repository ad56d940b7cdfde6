"""What a person confirmed before an app finalized, sent, marked paid or voided an invoice.

A question shows the invoice as the tools show it (its lines, its customer's details, its issuer)
and what the action adds (the recipients and the note of an e-mail, a payment's reference and day,
a void's reason: the action's input). It carries a digest of all of that. The action computes the
digest again in its own transaction, after its row lock and its own checks, and goes ahead only when
nothing changed: otherwise `ConfirmationStale`, nothing is done, and the surface asks about the
invoice as it is now. An action that nobody was asked about, because it looked bound to fail,
carries no digest: if it would now succeed it is stale too, so a concurrent write cannot slip an
unasked action through. Callers that ask nobody (REST, the dashboard) pass no confirmation at all.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass

from pydantic import BaseModel
from sqlmodel import Session

from core.base.errors import ConfirmationStale
from core.base.jsonout import jsonable
from core.billing.invoice_render import invoice_to_api
from core.models import Invoice

# Fields of the invoice that change without changing what the person was shown.
_NOT_SHOWN = frozenset({"updated"})


@dataclass(frozen=True)
class Confirmed:
    """The person's "yes" to a question whose digest is `digest`; None: nothing was asked, as the
    action looked bound to fail."""

    digest: str | None


NOTHING_ASKED = Confirmed(None)


def digest(view: dict, action: str, inputs: BaseModel | None) -> str:
    """The digest of a question about `view` (an invoice with its lines, as the API shows it)."""
    shown = {name: value for name, value in view.items() if name not in _NOT_SHOWN}
    facts = inputs.model_dump(mode="json") if inputs is not None else {}
    text = json.dumps(jsonable({"action": action, "invoice": shown, "input": facts}), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def require_as_confirmed(session: Session, invoice: Invoice, action: str, inputs: BaseModel | None,
                         confirmed: Confirmed | None) -> dict | None:
    """`check` for an action on the ORM: the invoice as confirmed (None when nothing is checked). Call
    it after the row lock and the action's own checks (an action that fails anyway fails with its own
    error), and act on what it gives: the customer and issuer it read stay the session's for the rest
    of the transaction (its identity map), so what is frozen into the invoice is what was hashed."""
    if confirmed is None:
        return None
    shown = invoice_to_api(session, invoice, with_lines=True)
    check(confirmed, shown, action, inputs)
    return shown


def check(confirmed: Confirmed, shown: dict, action: str, inputs: BaseModel | None) -> None:
    """Raise ConfirmationStale unless acting now on the invoice as it is `shown` (with its lines, as
    the API shows it) does what the person confirmed."""
    now_shown = digest(shown, action, inputs)
    if confirmed.digest is None:
        raise ConfirmationStale("Nothing was asked when the call began, but the action would now go ahead: "
                                "nothing happened. The person must be asked first.")
    if not hmac.compare_digest(confirmed.digest, now_shown):
        raise ConfirmationStale("The invoice or what goes with it changed after the person was asked: nothing "
                                "happened. The person must be asked again about it as it is now.")
