"""The business profile's bank details: an IBAN is checked (and then a routing number is its BIC), other
account numbers are free text. Through the onboarding and settings forms (the profile is read-only in the
API), and through `BusinessInput` as the command line's `invoicing business set` parses it."""

from __future__ import annotations

import pytest

from core.access.accounts import account_by_email
from core.base import db
from core.base.errors import ValidationFailed
from core.base.validation import parse
from core.billing.business import BusinessInput, find_profile
from tests.web.conftest import BUSINESS_FORM

IBAN_FORM = BUSINESS_FORM | {"bank.account_number": "DE89 3704 0044 0532 0130 00", "bank.routing_number": "COBADEFFXXX"}


def bank_of(email: str) -> dict | None:
    with db.transaction() as session:
        profile = find_profile(session, account_by_email(session, email).id)
        return profile.bank if profile else None


def refused_at(response, field: str) -> str:
    """The message the form shows at `field` (asserting a 422 with that field's error)."""
    assert response.status_code == 422
    html = response.text
    field_id = f"f-{field.replace('.', '-')}"
    assert f'aria-describedby="{field_id}-error' in html
    start = html.index(f'id="{field_id}-error">') + len(f'id="{field_id}-error">')
    return html[start:html.index("</p>", start)]


def test_an_iban_with_spaces_in_lower_case_is_kept_as_printed(signed_in):
    form = IBAN_FORM | {"bank.account_number": "de89 3704 0044 0532 0130 00", "bank.routing_number": "cobadeffxxx"}
    assert signed_in.submit("/onboarding", form).status_code == 303
    bank = bank_of(signed_in.email)
    assert (bank["account_number"], bank["routing_number"]) == ("DE89 3704 0044 0532 0130 00", "COBADEFFXXX")


def test_a_compact_iban_is_accepted(signed_in):
    assert signed_in.submit("/onboarding", IBAN_FORM | {"bank.account_number": "GB82WEST12345698765432",
                                                        "bank.routing_number": ""}).status_code == 303
    assert bank_of(signed_in.email)["account_number"] == "GB82 WEST 1234 5698 7654 32"


def test_an_iban_with_a_wrong_check_digit_is_refused_at_the_account_number(signed_in):
    response = signed_in.submit("/onboarding", IBAN_FORM | {"bank.account_number": "DE89 3704 0044 0532 0130 01"})
    assert "check digits do not match" in refused_at(response, "bank.account_number")
    assert bank_of(signed_in.email) is None


def test_an_iban_too_short_for_its_country_is_refused(signed_in):
    response = signed_in.submit("/onboarding", IBAN_FORM | {"bank.account_number": "DE89 3704 0044 0532 0130 0"})
    assert "length of an IBAN of its country" in refused_at(response, "bank.account_number")


def test_an_iban_of_an_unknown_country_is_refused(signed_in):
    response = signed_in.submit("/onboarding", IBAN_FORM | {"bank.account_number": "XX89 3704 0044 0532 0130 00"})
    assert "known country code" in refused_at(response, "bank.account_number")


@pytest.mark.parametrize("account, routing", [("12345678", "12-34-56"), ("000123456789", "021000021"),
                                              ("ACME-0042", "")])
def test_account_numbers_that_are_not_ibans_are_free_text(signed_in, account, routing):
    form = BUSINESS_FORM | {"bank.account_number": account, "bank.routing_number": routing}
    assert signed_in.submit("/onboarding", form).status_code == 303
    assert bank_of(signed_in.email)["account_number"] == account


def test_with_an_iban_a_routing_number_must_be_a_bic(signed_in):
    response = signed_in.submit("/onboarding", IBAN_FORM | {"bank.routing_number": "12-34-56"})
    assert "not a valid BIC" in refused_at(response, "bank.routing_number")


def test_the_settings_form_refuses_a_bad_iban_at_its_field(onboarded):
    response = onboarded.submit("/settings/business", IBAN_FORM | {"bank.account_number": "FR76 3000 6000 0112 3456 7890 188"})
    assert "is not a valid IBAN" in refused_at(response, "bank.account_number")
    assert bank_of(onboarded.email)["account_number"] == "12345678"  # unchanged


def test_the_command_lines_input_names_the_field():
    data = {"legal_name": "Muster", "country_code": "DE", "currency": "EUR",
            "bank": {"account_number": "DE89370400440532013000", "routing_number": "COBADEFF1"}}
    with pytest.raises(ValidationFailed) as refused:
        parse(BusinessInput, data)
    assert [error.path for error in refused.value.errors] == ["bank.routing_number"]
