"""The business profile: the issuer printed on every invoice. Read-only through the API."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field, ValidationInfo, field_validator
from sqlmodel import Session, select

from core.access import activity
from core.base import money
from core.base.api_types import EmailText, Timestamp
from core.base.clock import iso, now
from core.base.electronic_addresses import PEPPOL_ID_MAX, normalized_peppol_id
from core.base.errors import NotFound
from core.base.validation import EMAIL_MAX, NAME_MAX, PHONE_MAX, TAX_ID_MAX, Input, email_or_error
from core.billing import bank_account
from core.models import BusinessProfile

ADDRESS_KEYS = ("line1", "line2", "city", "region", "postal_code", "country_code", "country")
BANK_KEYS = ("bank_name", "account_name", "account_number", "routing_number")


class BusinessAddress(Input):
    line1: str | None = Field(default=None, max_length=256)
    line2: str | None = Field(default=None, max_length=256)
    city: str | None = Field(default=None, max_length=256)
    region: str | None = Field(default=None, max_length=256)
    postal_code: str | None = Field(default=None, max_length=32)
    country_code: str | None = Field(default=None, pattern="^[A-Za-z]{2}$")
    country: str | None = Field(default=None, max_length=256)


class BankDetails(Input):
    """An account number written as an IBAN must be a valid one (kept as printed: upper case, groups of
    four), and with it a routing number is its BIC; other account numbers and routing or sort codes are
    free text."""

    bank_name: str | None = Field(default=None, max_length=256)
    account_name: str | None = Field(default=None, max_length=256)
    account_number: str | None = Field(default=None, max_length=64)
    routing_number: str | None = Field(default=None, max_length=64)

    @field_validator("account_number")
    @classmethod
    def _iban(cls, value: str | None) -> str | None:
        if not value or not bank_account.looks_like_iban(value):
            return value
        if problem := bank_account.iban_problem(value):
            raise ValueError(problem)
        return bank_account.printed_iban(value)

    @field_validator("routing_number")
    @classmethod
    def _bic(cls, value: str | None, info: ValidationInfo) -> str | None:
        if not value or not bank_account.iban_of(info.data.get("account_number")):
            return value
        if (bic := bank_account.bic_of(value)) is None:
            raise ValueError("is not a valid BIC: with an IBAN, give the bank's BIC (8 or 11 letters and digits, "
                             "such as COBADEFFXXX) or leave it empty")
        return bic


class BusinessInput(Input):
    legal_name: str = Field(min_length=1, max_length=NAME_MAX)
    trade_name: str | None = Field(default=None, max_length=NAME_MAX)
    country_code: str = Field(pattern="^[A-Za-z]{2}$")
    currency: str = Field(min_length=3, max_length=3)
    tax_id: str | None = Field(default=None, max_length=TAX_ID_MAX)
    address: BusinessAddress = Field(default_factory=BusinessAddress)
    email: str | None = Field(default=None, max_length=EMAIL_MAX)
    phone: str | None = Field(default=None, max_length=PHONE_MAX)
    bank: BankDetails = Field(default_factory=BankDetails)
    invoice_prefix: str = Field(default="INV", min_length=1, max_length=20, pattern="^[A-Za-z0-9][A-Za-z0-9_-]*$")
    credit_note_prefix: str = Field(default="CN", min_length=1, max_length=20, pattern="^[A-Za-z0-9][A-Za-z0-9_-]*$")
    peppol_id: str | None = Field(default=None, max_length=PEPPOL_ID_MAX)

    _peppol_id = field_validator("peppol_id")(normalized_peppol_id)

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        return money.normalize_currency(value)

    @field_validator("country_code")
    @classmethod
    def _country(cls, value: str) -> str:
        return value.upper()

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        return email_or_error(value) if value else None


def find_profile(session: Session, account_id: uuid.UUID) -> BusinessProfile | None:
    """The account's profile, read once per session: an operation that writes an invoice reads it to
    price, to record the event and to answer. The session's identity map would return the same
    object for every later read anyway (its loaded attributes are not refreshed by a query)."""
    key = ("business_profile", account_id)
    if (kept := session.info.get(key)) is not None:
        return kept
    profile = session.exec(select(BusinessProfile).where(BusinessProfile.account_id == account_id)).first()
    if profile is not None:
        session.info[key] = profile
    return profile


def get_profile(session: Session, account_id: uuid.UUID) -> BusinessProfile:
    profile = find_profile(session, account_id)
    if profile is None:
        raise NotFound("No business profile exists yet: finish onboarding first.")
    return profile


def set_profile(session: Session, account_id: uuid.UUID, data: BusinessInput, *,
                by: uuid.UUID | None = None) -> BusinessProfile:
    """Create or replace the profile (onboarding, settings, command line); `by`: the person who did, for
    the business's activity."""
    if by is not None:
        activity.by_person(session, account_id, by, "business.updated", "Saved the business profile")
    profile = find_profile(session, account_id) or BusinessProfile(
        account_id=account_id, legal_name="", country_code="", currency="")
    values = data.model_dump()
    for key in ("legal_name", "trade_name", "country_code", "currency", "tax_id", "email", "phone",
                "invoice_prefix", "credit_note_prefix", "peppol_id"):
        setattr(profile, key, values[key])
    profile.address = values["address"]
    profile.bank = values["bank"]
    profile.updated_at = now()
    session.add(profile)
    session.flush()
    return profile


class BusinessAddressOut(BaseModel):
    """The issuer's address; every member may be null."""

    line1: str | None = Field(description="Street and number")
    line2: str | None = Field(description="Apartment, suite, building")
    city: str | None = Field(description="City or town")
    region: str | None = Field(description="State, county or region")
    postal_code: str | None = Field(description="Postal or ZIP code")
    country_code: str | None = Field(description="ISO 3166-1 alpha-2 country code")
    country: str | None = Field(description="Country name")


class BankDetailsOut(BaseModel):
    """Where customers pay, printed on invoices; every member may be null."""

    bank_name: str | None = Field(description="Name of the bank")
    account_name: str | None = Field(description="Name on the account")
    account_number: str | None = Field(description="Account number or IBAN")
    routing_number: str | None = Field(description="Routing number, sort code or BIC")


class BusinessOutModel(BaseModel):
    """The business profile: the issuer printed on every invoice. Edited in the web pages, read-only here."""

    id: str = Field(description="UUID of the profile")
    legal_name: str = Field(description="Registered name")
    trade_name: str | None = Field(description="Name the business trades under; shown instead of the legal name")
    country_code: str = Field(description="ISO 3166-1 alpha-2 country code")
    currency: str = Field(description="ISO 4217 code: the default currency of new invoices")
    tax_id: str | None = Field(description="Tax or VAT id, printed on invoices")
    address: BusinessAddressOut = Field(description="Postal address")
    email: EmailText | None = Field(description="Contact e-mail; invoice e-mails reply to it")
    phone: str | None = Field(description="Phone number, free text")
    bank: BankDetailsOut = Field(description="Bank details printed on invoices")
    invoice_prefix: str = Field(description="Prefix of invoice numbers: `INV` gives INV-0001, INV-0002, …")
    credit_note_prefix: str = Field(default="CN", description="Prefix of credit note numbers, a series of their own: "
                                                              "`CN` gives CN-0001, CN-0002, …")
    peppol_id: str | None = Field(default=None, description="Electronic address for e-invoices (Peppol participant id), "
                                                           "`scheme:identifier` such as `0208:0123456789`; null: "
                                                           "derived from an EU VAT number when one is given")
    created_at: Timestamp = Field(description="When the profile was created")


def business_to_api(profile: BusinessProfile) -> dict:
    """The profile as `BusinessOutModel` renders it (a plain dict: reads build no models; a test checks
    the two agree). `profile` is a row of `business_profiles`, ORM object or Core row."""
    address = profile.address or {}
    bank = profile.bank or {}
    return {
        "id": str(profile.id), "legal_name": profile.legal_name, "trade_name": profile.trade_name,
        "country_code": profile.country_code, "currency": profile.currency, "tax_id": profile.tax_id,
        "address": {key: address.get(key) for key in ADDRESS_KEYS}, "email": profile.email, "phone": profile.phone,
        "bank": {key: bank.get(key) for key in BANK_KEYS}, "invoice_prefix": profile.invoice_prefix,
        "credit_note_prefix": profile.credit_note_prefix,
        "peppol_id": profile.peppol_id, "created_at": iso(profile.created_at),
    }
