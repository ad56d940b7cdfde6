"""The business profile (read-only)."""

from operations import business
from rest.framework import Api

api = Api(tag="Business")
api.endpoint("GET", "/business", business.get_business, extra_responses=(404,),
             summary="Retrieve the business profile",
             description="The issuer printed on every invoice: names, address, tax id, bank details, default "
                         "currency and invoice number prefix. 404 until the account owner finishes onboarding in "
                         "the web pages, which are also where it is edited.")
