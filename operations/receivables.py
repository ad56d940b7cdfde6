"""Receivables: what customers owe on open invoices, per currency and per customer, by age."""

from core.billing import receivables
from core.billing.receivables import ReceivablesPageOut, ReceivablesQuery
from operations.pipeline import Call, Operation


async def _receivables(call: Call) -> dict:
    return await receivables.receivables(call.db, call.principal.account_id, call.query)


# A unit on the event loop (`call.db`): two aggregate statements, answered as `{data, next_cursor}`.
get_receivables = Operation("get_receivables", _receivables, scope="invoices:read", query=ReceivablesQuery,
                            response=ReceivablesPageOut, shape="raw")
