"""Payment reminders: the account's policy, a reminder now, and pausing one invoice's reminders."""

from operations import reminders as operations
from rest.framework import Api

api = Api(tag="Reminders")
api.endpoint("GET", "/reminder-policy", operations.get_reminder_policy, summary="Retrieve the reminder policy",
             description="The account's payment reminders: whether they are on, the steps (days from the due date, "
                         "each with its e-mail subject and text and whether it charges the late fee), the late fee, "
                         "and the reference rate a statutory fee uses. While never set: three default steps, off.")
api.endpoint("PUT", "/reminder-policy", operations.replace_reminder_policy, extra_responses=(422,),
             summary="Replace the reminder policy",
             description="The whole policy. Each step is e-mailed once per open invoice with something due, from "
                         "08:00 on its day in the business's time zone (when several are due at once, only the "
                         "latest), and not for an invoice paid, credited to zero, voided or with its reminders "
                         "paused. Reminders count against the account's hourly e-mail cap and wait for it to reset, "
                         "never dropped. A step with `late_fee` issues the fee as an invoice of its own naming the "
                         "overdue one (at most once per invoice): `fixed`, or `statutory` (the `reference_rate` plus "
                         "8 points a year on what is due for the days overdue, and 40 EUR on EUR invoices). "
                         "Placeholders in subjects and texts: {number}, {amount_due}, {due_date}, {days_overdue}, "
                         "{link}, {customer}, {business}. Requires `invoices:send`. Records "
                         "`invoice.reminder_sent` on each invoice reminded.")
api.endpoint("POST", "/invoices/{id}/remind", operations.remind_invoice, extra_responses=(409, 422),
             summary="Send a payment reminder now", tag="Invoices",
             description="E-mails the customer a reminder of an open invoice with something due now, with the "
                         "policy's wording for its days overdue (and an optional `message` before it). Counts as a "
                         "send: the credential's send limit, the account's e-mail cap, an app's `send` limits. "
                         "Requires `invoices:send` and an `Idempotency-Key`. Records `invoice.reminder_sent`.")
api.endpoint("POST", "/invoices/{id}/reminders", operations.pause_invoice_reminders, extra_responses=(422,),
             summary="Pause or resume an invoice's reminders", tag="Invoices",
             description="`paused: true` stops the policy's reminders for this invoice (a dispute, an agreed delay); "
                         "`false` lets them go on. Requires `invoices:write`.")
