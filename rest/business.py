"""The business profile (read-only)."""

from operations import business
from rest.framework import Api

api = Api(tag="Business")
api.endpoint("GET", "/business", business.get_business, extra_responses=(404,),
             summary="Retrieve the business profile (the issuer on every invoice)")
