"""What callers send to remind of one invoice now and to pause an invoice's reminders, and what a
reminder now answers (the policy's own input is core.schedules.reminder_policy)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StrictBool

from core.base.validation import MULTI_LINE, Input
from core.billing.invoice_render import InvoiceOut

MESSAGE_MAX = 2000


class RemindInput(Input):
    """An optional note put before the reminder's text."""

    message: Annotated[str | None, MULTI_LINE] = Field(default=None, max_length=MESSAGE_MAX,
                                                       description="Text put before the reminder's own")


class RemindOut(BaseModel):
    """The invoice reminded of, and where the reminder went."""

    data: InvoiceOut = Field(description="The invoice, without lines")
    emailed_to: str = Field(description="The customer's address the reminder went to")


class RemindersPause(Input):
    """Whether the policy's reminders of this invoice are paused."""

    paused: StrictBool = Field(description="true: no reminder of the policy for this invoice; false: as the policy says")
