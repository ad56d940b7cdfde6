"""Members of the business and the invitations to join it."""

from operations import members
from rest.framework import Api

api = Api(tag="Members")
api.endpoint("GET", "/members", members.list_members, summary="List the members of the business",
             description="Everyone who belongs to the business the credential acts for, with their role, oldest first. "
                         "A role bounds every key, token and app of that person in the business, on every request.")
api.endpoint("PATCH", "/members/{id}", members.update_member, extra_responses=(404,), summary="Change a member's role",
             description="Owners and admins; only an owner gives or takes `owner`, and the last owner keeps it. "
                         "Takes effect on the member's next request.")
api.endpoint("DELETE", "/members/{id}", members.remove_member, extra_responses=(404,), summary="Remove a member",
             description="Their API keys for the business are revoked and the apps they connected to it disconnected "
                         "at once. The last owner cannot be removed.")
api.endpoint("POST", "/members/{id}/transfer_ownership", members.transfer_ownership, extra_responses=(404,),
             summary="Hand ownership over",
             description="An owner only: the member becomes an owner and the caller's person becomes an admin.")
api.endpoint("GET", "/invitations", members.list_invitations, summary="List invitations",
             description="Every invitation of the business, newest first, with its status.")
api.endpoint("POST", "/invitations", members.create_invitation, status=201, summary="Invite someone",
             description="E-mails a link that works once, for that address only, for 14 days. Counted against the "
                         "business's invitations an hour and its e-mails an hour. Only an owner invites an owner.")
api.endpoint("POST", "/invitations/{id}/resend", members.resend_invitation, extra_responses=(404,),
             summary="Send an invitation again",
             description="A new link (the earlier one stops working), good for 14 days from now.")
api.endpoint("DELETE", "/invitations/{id}", members.revoke_invitation, extra_responses=(404,),
             summary="Revoke an invitation", description="Its link stops working. An accepted one cannot be revoked.")
