"""The start page and onboarding (the business profile form, shown until a profile exists)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from core.base.db import transaction
from core.base.errors import ValidationFailed
from core.base.validation import parse
from core.billing.business import (
    ADDRESS_KEYS,
    BANK_KEYS,
    BusinessInput,
    business_to_api,
    find_profile,
    set_profile,
)
from pages.routing import NEW_BUSINESS_PATH, Visit, errors_by_field, page, redirect
from web.invoice_pages import drafts_for_review
from web.rendering import notice_of, render

TOP_LEVEL_FIELDS = ("legal_name", "trade_name", "country_code", "currency", "tax_id", "email", "phone",
                    "invoice_prefix", "credit_note_prefix", "peppol_id")
FORM_FIELDS = (TOP_LEVEL_FIELDS + tuple(f"address.{k}" for k in ADDRESS_KEYS)
               + tuple(f"bank.{k}" for k in BANK_KEYS))

# Messages the start page may show, chosen by a code in the query string (never reflected text).
NOTICES = {
    "verification_sent": "A new verification e-mail is on its way.",
    "already_verified": "Your e-mail address is already verified.",
    "profile_saved": "Your business profile is saved.",
    "joined": "You joined the business. Switch between your businesses at the top of every page.",
}


def notice(visit: Visit) -> str | None:
    return notice_of(visit, NOTICES)


def start_page(visit: Visit) -> Response:
    if visit.user is None:
        return redirect("/login")
    if visit.business is None:
        return redirect(NEW_BUSINESS_PATH)
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
        business_name = (profile.trade_name or profile.legal_name) if profile else None
    return render(visit.request, "dashboard.html", business_name=business_name, review=drafts_for_review(visit),
                  verified=visit.user.email_verified_at is not None, notice=notice(visit))


def business_input(values: dict[str, str]) -> BusinessInput:
    """The form's flat `address.city`-style fields as a BusinessInput; blank fields are left out."""
    data: dict = {"address": {}, "bank": {}}
    for name, value in values.items():
        if not value:
            continue
        group, _, key = name.partition(".")
        if key:
            data[group][key] = value
        else:
            data[name] = value
    return parse(BusinessInput, data)


def onboarding_form(visit: Visit) -> Response:
    with transaction() as session:
        if find_profile(session, visit.account_id) is not None:
            return redirect("/")
    values = {name: "" for name in FORM_FIELDS} | {"email": visit.user.email, "invoice_prefix": "INV",
                                                   "credit_note_prefix": "CN"}
    return render(visit.request, "onboarding.html", values=values, errors={}, notice=notice(visit))


def onboard(visit: Visit) -> Response:
    values = {name: visit.text(name, 300) for name in FORM_FIELDS}
    try:
        data = business_input(values)
        with transaction() as session:
            account_id = visit.account_id
            if find_profile(session, account_id) is not None:
                return redirect("/")  # finished meanwhile, in another tab
            set_profile(session, account_id, data, by=visit.user.id)
    except ValidationFailed as exc:
        return render(visit.request, "onboarding.html", status_code=422, values=values,
                      errors=errors_by_field(exc.errors), notice=None)
    return redirect("/?notice=profile_saved")


def _profile_values(profile) -> dict[str, str]:
    """The stored profile as the form's flat fields."""
    stored = business_to_api(profile)
    values = {}
    for name in FORM_FIELDS:
        group, _, key = name.partition(".")
        value = (stored.get(group) or {}).get(key) if key else stored.get(name)
        values[name] = "" if value is None else str(value)
    return values


def business_profile(visit: Visit) -> Response:
    with transaction() as session:
        profile = find_profile(session, visit.account_id)
        if profile is None:
            return redirect("/onboarding")
        values = _profile_values(profile)
    return render(visit.request, "onboarding.html", values=values, errors={}, editing=True, notice=notice(visit))


def save_business_profile(visit: Visit) -> Response:
    values = {name: visit.text(name, 300) for name in FORM_FIELDS}
    try:
        data = business_input(values)
        with transaction() as session:
            set_profile(session, visit.account_id, data, by=visit.user.id)
    except ValidationFailed as exc:
        return render(visit.request, "onboarding.html", status_code=422, values=values,
                      errors=errors_by_field(exc.errors), editing=True, notice=None)
    return redirect("/settings/business?notice=profile_saved")


def routes() -> list[Route]:
    return [
        page("/", get=start_page, signed_in=False),
        page("/onboarding", get=onboarding_form, post=onboard, managers_only=True),
        # The API only reads the profile: the dashboard is where it is changed.
        page("/settings/business", get=business_profile, post=save_business_profile, managers_only=True),
    ]
