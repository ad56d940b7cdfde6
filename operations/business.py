"""The business profile (read-only through the API)."""

from core.billing.business import BusinessOutModel, business_to_api, get_profile
from operations.pipeline import Call, Operation


def _get_business(call: Call) -> dict:
    return business_to_api(get_profile(call.session, call.principal.account_id))


get_business = Operation("get_business", _get_business, scope="business:read", response=BusinessOutModel)
