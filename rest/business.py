from core.business import BusinessOutModel, business_to_api, get_profile
from rest.envelopes import one
from rest.framework import Api, Call

api = Api()


@api.operation("GET", "/business", scope="business:read", tag="Business", response=BusinessOutModel,
               summary="Retrieve the business profile (the issuer on every invoice)", extra_responses=(404,))
def get_business(call: Call) -> dict:
    return one(business_to_api(get_profile(call.session, call.principal.account_id)))
