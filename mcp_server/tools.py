"""The tools: each an operation of `operations` with how an assistant calls it.

Arguments are one flat object: the ids the operation names (`customer`, `invoice`, `item`), its
query or body fields exactly as the REST API takes them, and `idempotency_key` on every write.
Results are the objects the REST API returns, plus `formatted` money strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from operations import (
    bulk,
    business,
    credit_notes,
    customers,
    exports,
    invoices,
    payments,
    products,
    receivables,
    reminders,
    schedules,
)
from operations.confirmations import ACTIONS
from operations.pipeline import Operation

MINOR_UNITS = ("Money is always an integer in the currency's minor unit: 250000 is 2,500.00 USD, 5000 is 5,000 JPY "
               "(no decimals), 1250 is 1.250 BHD (three decimals).")
IDS = "Ids are prefixed strings (cus_, prod_, price_, in_, ii_, cn_, py_, sched_, exp_) or the underlying UUID."
IDEMPOTENCY_KEY = {
    "type": "string", "minLength": 1, "maxLength": 255,
    "description": "Any unique string; a retry with the same key and arguments returns the first result instead of "
                   "acting twice. Reuse it only to retry the very same call.",
    "examples": ["draft-acme-2026-11-23"],
}


DECLINED = {"type": "object", "required": ["declined", "action", "detail"], "description": "The person declined",
            "properties": {"declined": {"type": "boolean"}, "action": {"type": "string"},
                           "invoice": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "detail": {"type": "string"}}}
AWAITING = {"type": "object", "required": ["confirmation_required", "action", "invoice", "question"],
            "description": "Nothing happened yet: the person must confirm in the invoice view",
            "properties": {"confirmation_required": {"type": "boolean"}, "action": {"type": "string"},
                           "invoice": {"type": "string"}, "question": {"type": "string"},
                           "data": {"type": "object", "description": "The invoice as it stands"}}}


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    operation: Operation
    id_argument: str | None = None  # the argument naming the resource (`{id}` of the REST path)
    id_description: str = ""
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    @property
    def scope(self) -> str:
        return self.operation.scope

    @property
    def writes(self) -> bool:
        return not self.read_only

    def input_schema(self) -> dict:
        properties: dict[str, Any] = {}
        required: list[str] = []
        definitions: dict[str, Any] = {}
        if self.id_argument:
            properties[self.id_argument] = {"type": "string", "minLength": 1, "description": self.id_description}
            required.append(self.id_argument)
        for model in (self.operation.query, self.operation.body):
            if model is not None:
                schema = model.model_json_schema(by_alias=True)
                properties.update(schema.get("properties", {}))
                definitions.update(schema.get("$defs", {}))
                required += [name for name in schema.get("required", []) if name not in required]
        if self.writes:
            properties["idempotency_key"] = IDEMPOTENCY_KEY
        schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        if definitions:
            schema["$defs"] = definitions
        return schema

    def output_schema(self) -> dict:
        schema = _output_schema(self.operation.response, self.operation.shape)
        if self.name not in ACTIONS:
            return schema
        # A consequential tool may also answer that the person declined, or must confirm in the view.
        definitions = schema.pop("$defs", {})
        definitions[f"{self.name}_result"] = schema
        return {"type": "object", "anyOf": [{"$ref": f"#/$defs/{self.name}_result"}, DECLINED, AWAITING],
                "$defs": definitions}


def _output_schema(model: type[BaseModel] | None, shape: str) -> dict:
    if model is None:
        return {"type": "object"}
    schema = model.model_json_schema(mode="serialization", ref_template="#/$defs/{model}")
    definitions = schema.pop("$defs", {})
    if shape == "list":
        definitions[model.__name__] = schema
        item = {"$ref": f"#/$defs/{model.__name__}"}
        schema = {"type": "object", "required": ["data", "next_cursor"],
                  "properties": {"data": {"type": "array", "items": item},
                                 "next_cursor": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                                 "description": "Pass as `cursor` for the next page; null on the last"}}}
    elif shape == "items":
        definitions[model.__name__] = schema
        schema = {"type": "object", "required": ["data"],
                  "properties": {"data": {"type": "array", "items": {"$ref": f"#/$defs/{model.__name__}"}}}}
    if definitions:
        schema["$defs"] = definitions
    return schema


CUSTOMER = "The customer's id (cus_… or UUID)."
INVOICE = "The invoice's id (in_… or UUID)."
CREDIT_NOTE = "The credit note's id (cn_… or UUID)."
PAYMENT = "The payment's id (py_… or UUID)."
SCHEDULE = "The invoice schedule's id (sched_… or UUID)."
CREDITING = ("`lines` credit part of the invoice's lines (each `invoice_line` with `quantity` or `amount` before tax, "
             "or neither for all that remains of it) or add lines of their own (`description`, `amount`, `tax_rate`); "
             "omitted, all that remains of the invoice is credited. Where the money goes adds up to the total: "
             "`credit_amount` (off what an open invoice still has due), `refund_amount` (refunded outside the "
             "service) and `balance_amount` (the customer's credit for their next invoice); none given on an open "
             "invoice, all of it is credit. A paid invoice takes only refund and balance. ")

TOOLS: tuple[Tool, ...] = (
    Tool("get_business", "Business profile",
         "The business profile: the issuer printed on every invoice (name, address, currency, bank details).",
         business.get_business, read_only=True, idempotent=True),
    Tool("list_customers", "List customers",
         "Customers, newest first. `query` finds a case-insensitive part of the name; archived customers are left "
         "out unless include_deleted is true. Use the returned next_cursor as `cursor` for more.",
         customers.list_customers, read_only=True, idempotent=True),
    Tool("get_customer", "Get a customer", "One customer with billing e-mail, address and tax id. " + IDS,
         customers.get_customer, "customer", CUSTOMER, read_only=True, idempotent=True),
    Tool("create_customer", "Create a customer",
         "Create a customer to invoice. Only `name` is required; `email` is where invoices are sent.",
         customers.create_customer),
    Tool("update_customer", "Update a customer",
         "Change a customer's details; only the fields given change. Finalized invoices keep the details they "
         "were issued with.",
         customers.update_customer, "customer", CUSTOMER, idempotent=True),
    Tool("list_products", "List products", "Products of the catalog, newest first (`active` filters).",
         products.list_products, read_only=True, idempotent=True),
    Tool("list_prices", "List prices",
         "Prices of the catalog, newest first; filter by product, active, currency or type. " + MINOR_UNITS,
         products.list_prices, read_only=True, idempotent=True),
    Tool("list_invoices", "List invoices",
         "Invoices without their lines, newest first; filter by status (draft, open, paid, overdue, void), "
         "customer, and issue dates from/to (YYYY-MM-DD).",
         invoices.list_invoices, read_only=True, idempotent=True),
    Tool("get_invoice", "Get an invoice", "One invoice with its lines and totals. " + MINOR_UNITS,
         invoices.get_invoice, "invoice", INVOICE, read_only=True, idempotent=True),
    Tool("get_e_invoice", "Get an e-invoice",
         "A finalized invoice as a structured e-invoice under EN 16931, for the customer's accounting system or "
         "Peppol: `format` peppol (UBL, Peppol BIS Billing 3.0), cii (UN/CEFACT CII) or facturx (the PDF with the "
         "CII inside, in base64). Drafts have none. A validation error names the field to fill in first.",
         invoices.get_e_invoice, "invoice", INVOICE, read_only=True, idempotent=True),
    Tool("list_invoice_events", "Invoice history",
         "What happened to an invoice, newest first: created, updated, finalized, emailed, viewed, paid, voided…",
         invoices.list_invoice_events, "invoice", INVOICE, read_only=True, idempotent=True),
    Tool("create_invoice", "Draft an invoice",
         "Create a draft invoice for a customer, optionally with its lines (`items`). Each item is either priced "
         "(`price`: a price_ id; amount and tax come from the price) or ad hoc (`description` and `unit_amount`). "
         "Drafts can be edited freely; nothing is sent. " + MINOR_UNITS,
         invoices.create_invoice),
    Tool("preview_invoice", "Preview an invoice",
         "What create_invoice would create with the same arguments: the lines, subtotal, discount, tax and total "
         "(in minor units and formatted), with the same checks, but nothing is saved, numbered or recorded. Use it "
         "to show the user the totals before drafting. " + MINOR_UNITS,
         invoices.preview_invoice, read_only=True, idempotent=True),
    Tool("update_invoice", "Edit a draft",
         "Change a draft invoice; only the fields given change, and `items` replaces every line. Only drafts can "
         "be edited: a finalized invoice answers invalid_state.",
         invoices.update_invoice, "invoice", INVOICE, idempotent=True),
    Tool("add_invoice_item", "Add a line",
         "Add one line to a draft invoice (`invoice` is required) and get the updated invoice. " + MINOR_UNITS,
         invoices.add_invoice_item),
    Tool("remove_invoice_item", "Remove a line", "Remove one line (ii_…) from a draft and get the updated invoice.",
         invoices.remove_invoice_item, "item", "The line's id (ii_… or UUID).", destructive=True, idempotent=True),
    Tool("delete_draft_invoice", "Delete a draft",
         "Delete a draft invoice for good. Only drafts can be deleted; finalized invoices are voided instead.",
         invoices.delete_invoice, "invoice", INVOICE, destructive=True, idempotent=True),
    Tool("finalize_invoice", "Finalize an invoice",
         "Give a draft its permanent number and public link; it becomes open and can no longer be edited. Do this "
         "only when the user asked for it.",
         invoices.finalize_invoice, "invoice", INVOICE),
    Tool("void_invoice", "Void an invoice",
         "Cancel an open or overdue invoice; it keeps its number and cannot be paid afterwards. Only when the user "
         "asked for it.",
         invoices.void_invoice, "invoice", INVOICE, destructive=True),
    Tool("send_invoice", "E-mail an invoice",
         "E-mail the invoice with its PDF and public link to the customer (or `to`); a draft is finalized first. "
         "Only when the user asked for it. At most 10 sends per hour per credential.",
         invoices.send_invoice, "invoice", INVOICE, open_world=True),
    Tool("send_reminder", "E-mail a payment reminder",
         "E-mail the customer a payment reminder of an open or overdue invoice now, to the address it was issued "
         "to: the words of the reminder policy's step nearest its days overdue, with `message` (optional) put "
         "before them. Counts as a send (the same limits as send_invoice); the policy's own reminders are not "
         "changed. Only when the user asked for it; the person is asked to confirm.",
         reminders.remind_invoice, "invoice", INVOICE, open_world=True),
    Tool("mark_invoice_paid", "Mark an invoice paid",
         "Record that an open or overdue invoice was paid in full outside the service (no money moves): one payment "
         "of all it has due, which can be reversed later. For part of it, or a method, use record_payment. Only when "
         "the user says it was paid.",
         invoices.pay_invoice, "invoice", INVOICE),
    Tool("list_credit_notes", "List credit notes",
         "Credit notes, newest first, each with its lines; filter by `invoice` or `customer`.",
         credit_notes.list_credit_notes, read_only=True, idempotent=True),
    Tool("get_credit_note", "Get a credit note", "One credit note with its lines and where its money went. " + MINOR_UNITS,
         credit_notes.get_credit_note, "credit_note", CREDIT_NOTE, read_only=True, idempotent=True),
    Tool("preview_credit_note", "Preview a credit note",
         "What create_credit_note would issue with the same arguments: its lines, tax and total, computed exactly "
         "so, with the same checks, but nothing is saved or numbered. Use it to show the user before crediting. "
         + CREDITING + MINOR_UNITS,
         credit_notes.preview_credit_note, read_only=True, idempotent=True),
    Tool("create_credit_note", "Credit an invoice",
         "Correct an open or paid invoice with a credit note: a document of its own with the next credit note number "
         "that names the invoice. " + CREDITING + "Only when the user asked for it; the person is asked to confirm. "
         + MINOR_UNITS,
         credit_notes.create_credit_note),
    Tool("send_credit_note", "E-mail a credit note",
         "E-mail the credit note with its PDF and public link to the customer (or `to`). Only when the user asked "
         "for it. Shares the invoices' send limits.",
         credit_notes.send_credit_note, "credit_note", CREDIT_NOTE, open_world=True),
    Tool("void_credit_note", "Void a credit note",
         "Undo a credit note issued in error: what it took off the invoice is due again and its balance leaves the "
         "customer's. Refused once its balance paid another invoice. Only when the user asked for it.",
         credit_notes.void_credit_note, "credit_note", CREDIT_NOTE, destructive=True),
    Tool("list_payments", "List payments",
         "Payments recorded for invoices, newest first, reversed ones included (`status`); filter by `invoice` or "
         "`customer`. Use the returned next_cursor as `cursor` for more. " + MINOR_UNITS,
         payments.list_payments, read_only=True, idempotent=True),
    Tool("record_payment", "Record a payment",
         "Record money received outside the service for an open or overdue invoice (no money moves): part of what "
         "is due, or all of it, which makes the invoice paid. `amount` in minor units (at most its amount_due, "
         "unless `overpayment` is `balance`: the excess goes to the customer's balance for their next invoice), "
         "`method`, `paid_on`, `reference`. Only when the user says the money arrived; the person is asked to "
         "confirm. " + MINOR_UNITS,
         payments.record_payment),
    Tool("reverse_payment", "Reverse a payment",
         "Undo a recorded payment (a bounced transfer, a charge-back, a mistake), with the `reason`: the invoice "
         "owes that part again and a paid invoice reopens; the payment stays listed as reversed. Only when the user "
         "asked for it; the person is asked to confirm.",
         payments.reverse_payment, "payment", PAYMENT, destructive=True),
    Tool("get_receivables", "Receivables",
         "What customers owe on open invoices as of today, computed by the service: per currency (never added "
         "across currencies) the outstanding total, what is overdue and the aging buckets (current, days_1_30, "
         "days_31_60, days_61_90, days_over_90 past due), and the same per customer, largest first (a page: "
         "next_cursor as `cursor` for more customers). Use it instead of adding up invoices. " + MINOR_UNITS,
         receivables.get_receivables, read_only=True, idempotent=True),
    Tool("list_invoice_schedules", "List invoice schedules",
         "Recurring invoices, newest first, each with its recurrence in words (`summary`), mode, next run and the "
         "period it bills, invoices made so far, and why it is paused; filter by `customer` or `status` (active, "
         "paused, cancelled, completed). Use the returned next_cursor as `cursor` for more.",
         schedules.list_invoice_schedules, read_only=True, idempotent=True),
    Tool("create_invoice_schedule", "Schedule recurring invoices",
         "Invoice a customer on a schedule: `invoice` (what create_invoice takes, without customer and dates; "
         "`days_until_due` sets each due date) made once per period of `recurrence` (`interval` week, month, quarter "
         "or year, every `interval_count`; `day_of_month` or `last`; from `start_date`, today or later, until "
         "`end_date` or `count` invoices; at `run_at` in `time_zone`). `mode`: `draft` (each waits for the user to "
         "review; the default), `finalize` (needs invoices:finalize) or `finalize_and_send` (e-mailed to the "
         "customer; needs invoices:send too). Runs act with this connection's permissions. Show the user the first "
         "invoice with preview_invoice first; only when the user asked for it; the person is asked to confirm. "
         + MINOR_UNITS,
         schedules.create_invoice_schedule),
    Tool("pause_invoice_schedule", "Pause an invoice schedule",
         "Stop an active schedule's runs until it is resumed, with an optional `reason`. Nothing is made meanwhile.",
         schedules.pause_invoice_schedule, "schedule", SCHEDULE),
    Tool("resume_invoice_schedule", "Resume an invoice schedule",
         "Make a paused schedule active again, its runs acting from now on with this connection's permissions "
         "(the scopes of its mode). Periods that began while it was paused are made at once as its `catch_up` says "
         "(in `finalize_and_send` mode, e-mailed), unless `skip_missed` is true. Only when the user asked for it.",
         schedules.resume_invoice_schedule, "schedule", SCHEDULE),
    Tool("cancel_invoice_schedule", "Cancel an invoice schedule",
         "End an active or paused schedule for good: no further invoices; those made stay. It cannot be resumed. "
         "Only when the user asked for it; the person is asked to confirm.",
         schedules.cancel_invoice_schedule, "schedule", SCHEDULE, destructive=True),
    Tool("export_e_invoices", "Export a period's e-invoices",
         "Every invoice and credit note issued from `period_start` to `period_end` (inclusive, at most 366 days; "
         "drafts are not issued) as e-invoices in one `format` (peppol, cii or facturx), in one ZIP with a "
         "manifest.csv (at most 1,000 documents: export a busy year in parts); a document EN 16931 refuses is "
         "left out and listed in `skipped` with why. The ZIP is kept 24 "
         "hours: read the resource the result links (e-invoice-export://exp_…). Runs as a task for a client that "
         "declares the tasks extension (follow it with tasks/get; tasks/cancel stops it between documents).",
         exports.export_e_invoices, read_only=True),
    Tool("send_invoices", "E-mail several invoices",
         "E-mail each invoice of `invoices` (up to 50, in order) to its customer with its PDF, as send_invoice does "
         "for one (a draft is finalized first; `message` goes in every e-mail). The person confirms the list once, "
         "each invoice named with its recipient and amount. Stops at the first e-mail limit reached and says what "
         "was and was not sent, and why. Runs as a task for a client that declares the tasks extension (follow it "
         "with tasks/get; tasks/cancel stops it between invoices). Only when the user asked for it.",
         bulk.send_invoices, open_world=True),
    Tool("send_reminders", "E-mail several payment reminders",
         "E-mail a payment reminder of each open or overdue invoice of `invoices` (up to 50, in order), as "
         "send_reminder does for one, to the address each was issued to; `message` goes before every reminder's "
         "words. The person confirms the list once, each invoice named with its recipient, what is due and how "
         "late. Stops at the first e-mail limit reached and says what was and was not sent. Runs as a task for a "
         "client that declares the tasks extension. Only when the user asked for it.",
         bulk.send_reminders, open_world=True),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
