"""The business profile (read-only through the API), and which business the caller acts for."""

from typing import Literal

from pydantic import Field

from core.access.roles import Role
from core.base.ids import public_id
from core.billing.business import BusinessOutModel, business_to_api, get_profile
from operations.pipeline import Call, Operation


class CallerBusinessOut(BusinessOutModel):
    """The business the credential acts for (a key belongs to one; an app's sign-in is bound to the one
    the person chose), and the caller's role in it."""

    object: Literal["business"] = Field("business", description="Always `business`")
    account: str = Field(description="`acct_…`: the business the credential is bound to")
    role: Role = Field(description="The role of the person behind the credential: the upper bound of its scopes")


def _get_business(call: Call) -> dict:
    return {**business_to_api(get_profile(call.session, call.principal.account_id)), "object": "business",
            "account": public_id("account", call.principal.account_id), "role": call.principal.role}


get_business = Operation("get_business", _get_business, scope="business:read", response=CallerBusinessOut)
