"""Invoice schedules: create, list, retrieve, pause, resume, cancel, run now, and their runs."""

from core.base.validation import PageQuery
from core.schedules import runs, schedules
from core.schedules.schedule_inputs import ScheduleCreate, ScheduleListQuery, SchedulePause, ScheduleResume
from core.schedules.schedule_render import ScheduleOut, ScheduleRunOut
from operations.pipeline import Call, Operation

READ, WRITE = "invoices:read", "invoices:write"


def _shown(call: Call, schedule) -> dict:
    return schedules.schedule_to_api(call.session, schedule)


def _list(call: Call) -> dict:
    result = schedules.list_schedules(call.session, call.principal.account_id, call.query)
    return {"data": schedules.schedules_to_api(call.session, result.rows), "next_cursor": result.next_cursor}


def _runs(call: Call) -> dict:
    result = schedules.list_runs(call.session, call.principal.account_id, call.params["id"], call.query.cursor,
                                 call.query.limit)
    return {"data": [schedules.run_to_api(run) for run in result.rows], "next_cursor": result.next_cursor}


def _run_now(call: Call) -> dict:
    return schedules.run_to_api(runs.run_now(call.session, call.principal, call.params["id"]))


list_invoice_schedules = Operation("list_invoice_schedules", _list, scope=READ, query=ScheduleListQuery,
                                   response=ScheduleOut, shape="list")
get_invoice_schedule = Operation(
    "get_invoice_schedule",
    lambda call: _shown(call, schedules.get_schedule(call.session, call.principal.account_id, call.params["id"])),
    scope=READ, response=ScheduleOut)
create_invoice_schedule = Operation(
    "create_invoice_schedule",
    lambda call: _shown(call, schedules.create_schedule(call.session, call.principal, call.body,
                                                        confirmed=call.confirmed)),
    scope=WRITE, body=ScheduleCreate, body_required=True, idempotency="required", response=ScheduleOut,
    audit="Created the schedule")
pause_invoice_schedule = Operation(
    "pause_invoice_schedule",
    lambda call: _shown(call, schedules.pause(call.session, call.principal, call.params["id"], call.body)),
    scope=WRITE, body=SchedulePause, idempotency="optional", response=ScheduleOut, audit="Paused the schedule")
resume_invoice_schedule = Operation(
    "resume_invoice_schedule",
    lambda call: _shown(call, schedules.resume(call.session, call.principal, call.params["id"], call.body)),
    scope=WRITE, body=ScheduleResume, idempotency="optional", response=ScheduleOut, audit="Resumed the schedule")
cancel_invoice_schedule = Operation(
    "cancel_invoice_schedule",
    lambda call: _shown(call, schedules.cancel(call.session, call.principal, call.params["id"],
                                               confirmed=call.confirmed)),
    scope=WRITE, idempotency="optional", response=ScheduleOut, audit="Cancelled the schedule")
run_invoice_schedule = Operation("run_invoice_schedule", _run_now, scope=WRITE, idempotency="required",
                                 response=ScheduleRunOut, audit="Ran the schedule now")
list_schedule_runs = Operation("list_schedule_runs", _runs, scope=READ, query=PageQuery, response=ScheduleRunOut,
                               shape="list")
