"""Payment reminders: each step of an account's policy e-mailed once per open invoice, by the worker's
`reminders` job; and one reminder sent now, by request (`POST /invoices/{id}/remind`, MCP `send_reminder`).

* **When.** A step is due from 08:00 on its day (the due date plus its `days`) in the business's time
  zone (its country's main zone), for an open invoice with something due whose reminders are not
  paused, if the step's day is not before the day it was finalized. When several steps are due at once
  (the worker was down), only the latest is sent and the others are recorded as skipped: never a
  burst of reminders.
* **Once.** A step's row is unique per invoice (`invoice_reminders`), inserted with the invoice's row
  locked and its state read again, and committed before the e-mail goes (`sending`); sent, it is
  `sent` with an `invoice.reminder_sent` event. A process that stops while sending leaves `sending`,
  given up as `unknown` after a lease, never sent again.
* **Stops.** Paid, credited to zero, voided or paused, an invoice gets no further reminder: checked
  under its lock as each is claimed, also for one deferred.
* **Caps.** Each reminder counts against the account's hourly e-mail cap; over it, the reminder waits
  (`pending`) until the cap resets, never dropped.
* **Late fee.** A step marked `late_fee` issues the policy's fee as an invoice of its own (finalized,
  naming the overdue one; the overdue invoice never changes), at most once per invoice and never on a
  late fee's own invoice, in the reminder's transaction, and the reminder explains it. A fee that
  cannot be issued (the customer archived) leaves the reminder to go without it, saying why.
* **Who.** Only accounts whose e-mail address is verified send reminders (as invoice e-mails), and
  only to customers with an address. One invoice's failure never holds up another's.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from email.utils import formataddr
from zoneinfo import ZoneInfo

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from config.settings import get_settings
from core.access import accounts, activity
from core.access.principal import Principal
from core.base import executor, ids, lookup
from core.base.clock import now
from core.base.db import transaction
from core.base.errors import DomainError, InvalidState, ValidationFailed
from core.base.money import format_money
from core.billing import delegated_actions, events, invoices, sending
from core.billing.confirmations import Confirmed, require_as_confirmed
from core.billing.invoice_render import amount_due, invoice_to_api
from core.billing.presentation import issuer_name, public_url
from core.mechanisms import ratelimit
from core.models import Invoice, InvoiceReminder, ReminderPolicy
from core.outbound import mailer
from core.outbound.mailer import MailRejected
from core.schedules import late_fees, reminder_policy, schedules
from core.schedules.reminder_inputs import RemindInput
from core.schedules.reminder_policy import ReminderPolicyInput, ReminderStep

log = logging.getLogger("invoicing.reminders")

POLL_SECONDS = 60.0
SEND_FROM = time(8, 0)  # local time from which a day's reminders go
LEASE = timedelta(minutes=10)
MAX_PER_PASS = 50


@dataclass
class Sent:
    sent: int = 0
    deferred: int = 0
    skipped: int = 0


def run(clock=now) -> Sent:
    """The worker's `reminders` job."""
    return send_due(clock())


def send_due(moment: datetime, done: Sent | None = None) -> Sent:
    """The job's part: every reminder due at `moment`, and those waiting for a cap that has reset."""
    done = done or Sent()
    with transaction() as session:
        policies = list(session.exec(select(ReminderPolicy).where(ReminderPolicy.active.is_(True))))
        waiting = list(session.exec(select(InvoiceReminder.id).where(
            InvoiceReminder.status == "pending", InvoiceReminder.next_attempt_at <= moment).limit(MAX_PER_PASS)))
    for reminder_id in waiting:
        _deliver(reminder_id, moment, done)
    budget = [MAX_PER_PASS]  # new reminders this pass, all accounts together: the rest wait for the next
    for policy in policies:
        try:
            _send_policy(policy, moment, done, budget)
        except Exception:  # one account's failure never stops the others'
            log.exception("Reminders of account %s failed; they are tried again next pass.", policy.account_id)
    give_up_interrupted(moment)
    return done


def _zone(session: Session, account_id: uuid.UUID) -> ZoneInfo:
    return ZoneInfo(schedules.default_time_zone(session, account_id))


def _send_policy(row: ReminderPolicy, moment: datetime, done: Sent, budget: list[int]) -> None:
    policy = reminder_policy.policy_of_row(row)
    if not policy.steps:
        return
    with transaction() as session:
        if not accounts.account_email_verified(session, row.account_id):
            return  # as for invoice e-mails: nothing goes out in the name of an unverified account
        zone = _zone(session, row.account_id)
        local = moment.astimezone(zone)
        today = local.date() if local.time() >= SEND_FROM else local.date() - timedelta(days=1)
        earliest = min(step.days for step in policy.steps)
        candidates = list(session.exec(select(Invoice).where(
            Invoice.account_id == row.account_id, Invoice.status == "open", Invoice.reminders_paused.is_(False),
            Invoice.due_date.is_not(None), Invoice.due_date <= today - timedelta(days=earliest))
            .order_by(Invoice.due_date, Invoice.id)))
        rowed = {(reminder.invoice_id, reminder.step_days) for reminder in session.exec(select(InvoiceReminder).where(
            InvoiceReminder.account_id == row.account_id, InvoiceReminder.manual.is_(False),
            InvoiceReminder.invoice_id.in_([invoice.id for invoice in candidates])))} if candidates else set()
    for invoice in candidates:
        if amount_due(invoice) <= 0 or budget[0] <= 0:
            continue
        finalized_on = invoice.finalized_at.astimezone(zone).date() if invoice.finalized_at else invoice.issue_date
        due = [step for step in sorted(policy.steps, key=lambda step: step.days)
               if finalized_on <= invoice.due_date + timedelta(days=step.days) <= today]
        if not due or (invoice.id, due[-1].days) in rowed:
            continue
        for passed in due[:-1]:
            if (invoice.id, passed.days) not in rowed:
                done.skipped += _skip(invoice, passed)
        budget[0] -= 1
        try:
            if _claim_step(invoice.id, due[-1], policy, moment, zone):
                _deliver_claimed(invoice.id, due[-1].days, moment, done)
        except Exception:  # this invoice only: the others go on
            log.exception("Reminder of invoice %s failed; it is tried again next pass.", invoice.id)


def _skip(invoice: Invoice, step: ReminderStep) -> int:
    try:
        with transaction() as session:
            session.add(InvoiceReminder(account_id=invoice.account_id, invoice_id=invoice.id, step_days=step.days,
                                        status="skipped", error="A later step was due too: only the latest is sent."))
        return 1
    except IntegrityError:
        return 0


def _remindable(invoice: Invoice | None) -> str | None:
    """Why `invoice` gets no reminder now, or None."""
    if invoice is None or invoice.status != "open":
        return f"the invoice is {invoice.status if invoice else 'gone'}"
    if amount_due(invoice) <= 0:
        return "nothing is due"
    if invoice.reminders_paused:
        return "its reminders are paused"
    return None


def _claim_step(invoice_id: uuid.UUID, step: ReminderStep, policy: ReminderPolicyInput, moment: datetime,
                zone: ZoneInfo) -> bool:
    """The step's row inserted (`pending`), the late fee issued with it when the step charges one; False
    when another process has it or the invoice no longer takes reminders. A customer without an e-mail
    address gets the row `failed` (once: no later pass tries that step again), and no fee."""
    try:
        with transaction() as session:
            invoice = lookup.locked(session, Invoice, invoice_id)
            if _remindable(invoice) is not None:
                return False
            reminder = InvoiceReminder(account_id=invoice.account_id, invoice_id=invoice.id, step_days=step.days,
                                       status="pending", next_attempt_at=moment)
            if not (invoice.customer_snapshot or {}).get("email"):
                reminder.status, reminder.next_attempt_at = "failed", None
                reminder.error = "The customer has no e-mail address."
            elif step.late_fee and policy.late_fee is not None and invoice.late_fee_for_id is None \
                    and not _fee_charged(session, invoice.id):
                reminder.late_fee_invoice_id, reminder.error = _fee(session, invoice, policy, moment, zone)
            session.add(reminder)
            session.flush()
        return reminder.status == "pending"
    except IntegrityError:
        return False


def _fee(session: Session, invoice: Invoice, policy: ReminderPolicyInput, moment: datetime, zone: ZoneInfo):
    """The late fee's invoice id, issued in a savepoint, and None; or None and why it could not be."""
    try:
        with session.begin_nested():
            return late_fees.issue(session, _owner(session, invoice.account_id), invoice, policy,
                                   moment.astimezone(zone).date()), None
    except DomainError as refused:
        return None, f"No late fee was charged: {refused.detail}"[:1000]


def _fee_charged(session: Session, invoice_id: uuid.UUID) -> bool:
    return session.exec(select(InvoiceReminder.id).where(InvoiceReminder.invoice_id == invoice_id,
                                                         InvoiceReminder.late_fee_invoice_id.is_not(None))).first() \
        is not None


def _owner(session: Session, account_id: uuid.UUID) -> Principal:
    """Who the business's own reminders act as: its first owner, recorded as the reminders' doing."""
    person = Principal.signed_in_person(account_id, accounts.owner_of(session, account_id).id, "owner")
    return dataclasses.replace(person, automatic="reminders")


def _deliver_claimed(invoice_id: uuid.UUID, step_days: int, moment: datetime, done: Sent) -> None:
    with transaction() as session:
        reminder_id = session.exec(select(InvoiceReminder.id).where(
            InvoiceReminder.invoice_id == invoice_id, InvoiceReminder.step_days == step_days,
            InvoiceReminder.manual.is_(False))).one()
    _deliver(reminder_id, moment, done)


def _deliver(reminder_id: uuid.UUID, moment: datetime, done: Sent) -> None:
    """Send a `pending` reminder: claimed (`sending`) with the account's e-mail counted, or put back to
    wait for the cap, or skipped when its invoice no longer takes reminders."""
    with transaction() as session:
        reminder = lookup.locked(session, InvoiceReminder, reminder_id)
        if reminder is None or reminder.status != "pending":
            return
        invoice = lookup.locked(session, Invoice, reminder.invoice_id)
        if (why := _remindable(invoice)) is not None:
            reminder.status, reminder.error, reminder.next_attempt_at = "skipped", f"Not sent: {why}.", None
            session.add(reminder)
            done.skipped += 1
            return
        usage = ratelimit.hit(session, ratelimit.emails_per_account(), str(invoice.account_id))
        if usage.exceeded:
            usage.refused()
            reminder.error = "Waiting for the account's hourly e-mail cap to reset."
            reminder.next_attempt_at = moment + timedelta(seconds=max(1, usage.retry_after))
            session.add(reminder)
            done.deferred += 1
            return
        if not reminder.manual and (why := _outside_policy(session, reminder)) is not None:
            reminder.status, reminder.error, reminder.next_attempt_at = "skipped", f"Not sent: {why}.", None
            session.add(reminder)
            done.skipped += 1
            return
        reminder.status, reminder.next_attempt_at = "sending", max(now(), moment)
        session.add(reminder)
        policy = reminder_policy.policy_of(session, invoice.account_id)
        view = invoice_to_api(session, invoice, with_lines=False)
        fee = session.get(Invoice, reminder.late_fee_invoice_id) if reminder.late_fee_invoice_id else None
        fee_view = invoice_to_api(session, fee, with_lines=False) if fee else None
        step = _step(policy, reminder.step_days)
    to = (view.get("customer_details") or {}).get("email")
    error = None
    if not to:
        error = "The customer has no e-mail address."
    else:
        try:
            mailer.send(reminder_message(view, step, to=to, today=moment.date(), fee=fee_view), kind="reminder")
        except MailRejected as exc:
            error = f"The e-mail provider did not accept the reminder ({exc.detail})."
    _sent(reminder_id, to, error, {"actor": "reminders", "step_days": reminder.step_days})
    if error is None:
        done.sent += 1


def _outside_policy(session: Session, reminder: InvoiceReminder) -> str | None:
    """Why a reminder that waited (for the cap) is no longer the policy's to send, or None."""
    policy = reminder_policy.policy_of(session, reminder.account_id)
    if not policy.active:
        return "reminders were turned off"
    if reminder.step_days not in {step.days for step in policy.steps}:
        return "its step was removed from the policy"
    return None


def _step(policy: ReminderPolicyInput, days: int) -> ReminderStep:
    """The step of `days`, or for a reminder by request the policy's step nearest (default wording)."""
    steps = policy.steps or reminder_policy.DEFAULT_STEPS
    exact = [step for step in steps if step.days == days]
    if exact:
        return exact[0]
    return min(steps, key=lambda step: (abs(step.days - days), -step.days))


def _sent(reminder_id: uuid.UUID, to: str | None, error: str | None, meta: dict) -> None:
    with transaction() as session:
        reminder = lookup.locked(session, InvoiceReminder, reminder_id)
        if reminder.status != "sending":  # given up as unknown meanwhile: that stands
            return
        if error is not None:
            reminder.status, reminder.error = "failed", error[:1000]
            session.add(reminder)
            return
        reminder.status, reminder.sent_to, reminder.sent_at = "sent", to, now()  # any note on its fee stays
        session.add(reminder)
        invoice = session.get(Invoice, reminder.invoice_id)
        fee = ids.public_id("invoice", reminder.late_fee_invoice_id) if reminder.late_fee_invoice_id else None
        events.record(session, invoice, "invoice.reminder_sent", {
            **meta, "to": to, "manual": reminder.manual, **({"late_fee_invoice": fee} if fee else {})})


def give_up_interrupted(moment: datetime) -> None:
    with transaction() as session:
        session.exec(update(InvoiceReminder).where(
            InvoiceReminder.status == "sending", InvoiceReminder.next_attempt_at < moment - LEASE).values(
            status="unknown", error="The process sending this reminder stopped; it may or may not have gone."))


# --- the e-mail --------------------------------------------------------------------------------------


def values_for(view: dict, today: date) -> dict[str, str]:
    """What the placeholders of a reminder about the invoice `view` stand for."""
    due_date = date.fromisoformat(str(view["due_date"])) if view.get("due_date") else None
    return {
        "number": view["number"], "amount_due": format_money(view["amount_due"], view["currency"]),
        "due_date": due_date.isoformat() if due_date else "", "link": public_url(view["public_url_token"]),
        "days_overdue": str(max(0, (today - due_date).days)) if due_date else "0",
        "customer": (view.get("customer_details") or {}).get("name") or "", "business": issuer_name(view, ""),
    }


def reminder_message(view: dict, step: ReminderStep, *, to: str, today: date, fee: dict | None, note: str | None = None):
    values = values_for(view, today)
    body = reminder_policy.filled(step.body, values)
    if note:
        body = f"{note.strip()}\n\n{body}"
    if fee is not None:
        body += "\n\n" + late_fees.explained(fee)
    issuer = view.get("issuer") or {}
    sender_name = issuer_name(view, "Your supplier")
    return mailer.compose(to=to, subject=reminder_policy.filled(step.subject, values), body=body.strip() + "\n",
                          reply_to=issuer.get("email"), sender=formataddr((sender_name, get_settings().sender_address)))


# --- one reminder now, by request ---------------------------------------------------------------------


def remind_now(session: Session, principal: Principal, id_text: str, data: RemindInput | None = None, *,
               confirmed: Confirmed | None = None) -> tuple[dict, str]:
    """E-mail a reminder of one open invoice now, as `principal` (its send limits and the account's cap,
    an app's `send` limits): the invoice, and the address. `session` is one whose transactions the
    caller manages: the reminder is committed as sending before the mail server is talked to.
    `confirmed`: what the person was asked (`remind`: the invoice with its lines and the note), when a
    surface asked (core.billing.confirmations); checked after the lock and the checks above."""
    invoice = invoices.get_invoice(session, principal.account_id, id_text, lock=True)
    if invoice.status != "open":
        raise InvalidState(f"Invoice {id_text} is {invoice.status}: only an open invoice gets a reminder.")
    if amount_due(invoice) <= 0:
        raise InvalidState(f"Invoice {id_text} has nothing due.")
    if not accounts.account_email_verified(session, principal.account_id):
        raise InvalidState("The account e-mail address is not verified: verify it before sending reminders.")
    view = invoice_to_api(session, invoice, with_lines=False)
    to = (view.get("customer_details") or {}).get("email")
    if not to:
        raise ValidationFailed.at("customer", "has no e-mail address to remind")
    executor.within(session, delegated_actions.act_for, principal, "send", invoice)
    data = data or RemindInput()
    require_as_confirmed(session, invoice, "remind", data, confirmed)
    usage = sending.count_send(session, principal)
    today = now().date()
    days = (today - invoice.due_date).days if invoice.due_date else 0
    reminder = InvoiceReminder(account_id=invoice.account_id, invoice_id=invoice.id, step_days=days, manual=True,
                               status="sending", next_attempt_at=now())
    session.add(reminder)
    step = _step(reminder_policy.policy_of(session, principal.account_id), days)
    session.commit()
    try:
        mailer.send(reminder_message(view, step, to=to, today=today, fee=None, note=data.message), kind="reminder")
    except MailRejected as exc:
        _sent(reminder.id, to, f"The e-mail provider did not accept the reminder ({exc.detail}).", {})
        from core.base.errors import UpstreamFailed
        raise UpstreamFailed(f"The e-mail provider did not accept the reminder ({exc.detail}).", usage=usage) from None
    _sent(reminder.id, to, None, {**principal.event_meta(), "step_days": days})
    session.refresh(invoice)
    return invoice_to_api(session, invoice, with_lines=False), to


def pause(session: Session, principal: Principal, id_text: str, paused: bool) -> Invoice:
    """Pause (or resume) the policy's reminders of one invoice: whether e-mails go to the customer, so
    it takes what sending takes (a sales member, who drafts, cannot stop the business's reminders)."""
    invoice = invoices.get_invoice(session, principal.account_id, id_text, lock=True)
    if invoice.reminders_paused != paused:
        invoice.reminders_paused = paused
        invoice.updated = now()
        session.add(invoice)
        which = invoice.number or ids.public_id("invoice", invoice.id)
        activity.record(session, principal, "invoice.reminders_paused" if paused else "invoice.reminders_resumed",
                        f"{'Paused' if paused else 'Resumed'} the reminders of {which}")
    return invoice


def next_reminder(session: Session, invoice: Invoice) -> dict | None:
    """The policy's next reminder of an open invoice: its day and step, or None."""
    if _remindable(invoice) is not None or invoice.due_date is None:
        return None
    policy = reminder_policy.policy_of(session, invoice.account_id)
    if not policy.active:
        return None
    rowed = set(session.exec(select(InvoiceReminder.step_days).where(
        InvoiceReminder.invoice_id == invoice.id, InvoiceReminder.manual.is_(False))))
    for step in sorted(policy.steps, key=lambda step: step.days):
        day = invoice.due_date + timedelta(days=step.days)
        if step.days not in rowed and day >= now().date():
            return {"date": day.isoformat(), "days": step.days, "late_fee": step.late_fee}
    return None

