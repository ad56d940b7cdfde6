"""Payment reminders: the account's policy, one reminder now, and pausing an invoice's reminders."""

from core.billing import invoices, sending
from core.billing.invoice_render import InvoiceOut
from core.schedules import reminder_policy, reminders
from core.schedules.reminder_inputs import RemindersPause, RemindInput, RemindOut
from core.schedules.reminder_policy import ReminderPolicyInput, ReminderPolicyOut
from operations.pipeline import Call, Operation


def _remind(call: Call) -> dict:
    data, to = reminders.remind_now(call.session, call.principal, call.params["id"], call.body,
                                    confirmed=call.confirmed)
    return {"data": data, "emailed_to": to}


def _pause(call: Call) -> dict:
    invoice = reminders.pause(call.session, call.principal, call.params["id"], call.body.paused)
    return invoices.invoice_to_api(call.session, invoice, with_lines=False)


get_reminder_policy = Operation(
    "get_reminder_policy", lambda call: reminder_policy.to_api(call.session, call.principal.account_id),
    scope="invoices:read", response=ReminderPolicyOut)
replace_reminder_policy = Operation(
    "replace_reminder_policy",
    lambda call: reminder_policy.replace(call.session, call.principal.account_id, call.body),
    scope="invoices:send", body=ReminderPolicyInput, body_required=True, response=ReminderPolicyOut,
    audit="Changed the reminder policy")
remind_invoice = Operation("remind_invoice", _remind, scope="invoices:send", idempotency="required", body=RemindInput,
                           own_limit=sending.send_limit_usage, response=RemindOut, shape="raw")
pause_invoice_reminders = Operation("pause_invoice_reminders", _pause, scope="invoices:send", body=RemindersPause,
                                    body_required=True, response=InvoiceOut)
