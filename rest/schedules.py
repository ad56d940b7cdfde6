"""Invoice schedules: recurring invoices made by the worker, once per period."""

from operations import schedules as operations
from rest.framework import Api

api = Api(tag="Invoice schedules")
api.endpoint("GET", "/invoice-schedules", operations.list_invoice_schedules, summary="List invoice schedules",
             description="Newest first, paginated. Filters: `customer` (404 when not the account's) and `status`.")
api.endpoint("POST", "/invoice-schedules", operations.create_invoice_schedule, status=201, extra_responses=(404, 422),
             summary="Create an invoice schedule",
             description="A recurring invoice: `invoice` (what `POST /invoices` takes, without customer and dates) "
                         "made for `customer` once per period of `recurrence` (`week`, `month`, `quarter` or `year`, "
                         "every `interval_count`; a month's `day_of_month` or `last`, the 29th to 31st falling on a "
                         "shorter month's last day; from `start_date`, until `end_date` or `count` invoices), at "
                         "`run_at` in `time_zone`. Each run issues the invoice on its day and names the schedule and "
                         "the `period` it bills. `mode`: `draft` for a person to review, `finalize`, or "
                         "`finalize_and_send`. The runs act as the credential that creates the schedule: its scopes "
                         "(`invoices:write`, plus `invoices:finalize` and `invoices:send` as the mode needs, checked "
                         "now and at every run) and an app's limits apply at each run; a run refused pauses the "
                         "schedule (`invoice_schedule.paused`). A run that fails otherwise (a customer archived, a "
                         "price gone) is recorded (`invoice_schedule.run_failed`) and retried after 1 hour, 6 hours, "
                         "then daily, `max_attempts` in all before the schedule pauses. Each period is made exactly "
                         "once, its e-mail sent at most once, by any number of workers. Requires an "
                         "`Idempotency-Key`.")
api.endpoint("GET", "/invoice-schedules/{id}", operations.get_invoice_schedule, summary="Retrieve an invoice schedule",
             description="With its next run, the period it bills, how many invoices it made, and its latest failure.")
api.endpoint("POST", "/invoice-schedules/{id}/pause", operations.pause_invoice_schedule, extra_responses=(409,),
             summary="Pause an invoice schedule",
             description="No run until it is resumed; an optional `reason` is kept. 409 unless active. Records "
                         "`invoice_schedule.paused`.")
api.endpoint("POST", "/invoice-schedules/{id}/resume", operations.resume_invoice_schedule, extra_responses=(409,),
             summary="Resume an invoice schedule",
             description="Active again, its runs acting from now on as the caller (who needs the scopes of its mode). "
                         "Periods whose time passed while it was paused are made as `catch_up` says, or skipped with "
                         "`skip_missed`. 409 unless paused. Records `invoice_schedule.resumed`.")
api.endpoint("POST", "/invoice-schedules/{id}/cancel", operations.cancel_invoice_schedule, extra_responses=(409,),
             summary="Cancel an invoice schedule",
             description="No further runs, for good; the invoices made stay. 409 once cancelled or completed. Records "
                         "`invoice_schedule.cancelled`.")
api.endpoint("POST", "/invoice-schedules/{id}/run", operations.run_invoice_schedule, status=201,
             extra_responses=(409, 422), summary="Run the next period now",
             description="Makes the next period's invoice at once, as the schedule's runs do (acting as its creator; "
                         "the caller needs the scopes of its mode), issued today; the period is then done and the "
                         "next run moves to the following one. A failure is answered and changes nothing. In "
                         "`finalize_and_send` mode the e-mail follows within seconds (the worker sends it, at most "
                         "once). 409 unless active, or when no period is left. Requires an `Idempotency-Key`.")
api.endpoint("GET", "/invoice-schedules/{id}/runs", operations.list_schedule_runs, summary="List a schedule's runs",
             description="Its periods made or skipped, newest first, paginated, with each invoice and e-mail status.")
