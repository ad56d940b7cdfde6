"""The grants of this server on Authlib's RFC classes: authorization code with PKCE S256 only
(OAuth 2.1), and refresh tokens rotated on every use. Both bind tokens to one resource (RFC 8707)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from authlib.oauth2.rfc6749 import ClientAuthentication, InvalidClientError, InvalidRequestError, OAuth2Error, grants
from authlib.oauth2.rfc7636 import CodeChallenge

from authz import clients, scoping, tokens
from authz.adapter import HttpOAuth2Request, db, document_error
from authz.errors import InvalidAuthorizationDetailsError, safe_description
from core.access import authorization_details
from core.models import User


class PkceS256(CodeChallenge):
    """PKCE is required on every authorization request, with S256 only (OAuth 2.1)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge with code_challenge_method=S256.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256.")
        super().validate_code_challenge(grant, redirect_uri)


TOKEN_AUTH_METHODS = list(clients.SUPPORTED_AUTH_METHODS)


@dataclass(frozen=True)
class Prefetched:
    """What a refresh reads up front: the client named (None when unknown) and the refresh token
    presented, with its grant (None when unknown)."""

    client: clients.Client | None
    token: tokens.StoredToken | None


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS

    @staticmethod
    def validate_authorization_redirect_uri(request, client):
        # Authlib's own version echoes the URI into the error description, which must be plain
        # ASCII without quotes: a hostile URI would crash it.
        requested = request.payload.redirect_uri
        if requested:
            if not client.check_redirect_uri(requested):
                raise InvalidRequestError("The redirect_uri is not registered for this client.")
            return requested
        if default := client.get_default_redirect_uri():
            return default
        raise InvalidRequestError("Missing redirect_uri: this client registered several.")

    def validate_authorization_request(self):
        redirect_uri = super().validate_authorization_request()
        request: HttpOAuth2Request = self.request
        try:
            request.resource = scoping.resolve_resource(request.payload.datalist.get("resource", []))
            request.requested_details = requested_details(request.payload.data.get("authorization_details"))
            request.requested_scopes = scoping.requested_scopes(request.resource, request.payload.scope,
                                                                with_details=request.requested_details)
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        request.scope = " ".join(request.requested_scopes)
        return redirect_uri

    def save_authorization_code(self, code, request: HttpOAuth2Request):
        user: User = request.user
        data = request.payload.data
        tokens.save_code(
            db(), code, client_id=request.client.get_client_id(), user_id=user.id,
            account_id=request.business.account_id, redirect_uri=request.payload.redirect_uri,
            scopes=request.granted_scopes, resource=request.resource,
            authorization_details=authorization_details.to_json(request.granted_details),
            code_challenge=data["code_challenge"], code_challenge_method=data["code_challenge_method"],
        )

    def query_authorization_code(self, code, client):
        return tokens.redeem_code(db(), code, client.get_client_id())

    def delete_authorization_code(self, authorization_code):
        pass  # used up when it was redeemed

    def authenticate_user(self, authorization_code):
        return db().get(User, authorization_code.row.user_id)

    def validate_token_request(self):
        super().validate_token_request()
        scoping.check_same_resource(self.request.payload.datalist.get("resource", []),
                                    self.request.authorization_code.row.resource)


class RefreshGrant(grants.RefreshTokenGrant):
    """Authlib's refresh grant on the client and token `authz.refreshing` read up front (`prefetched`),
    with no database inside: the new pair is kept (`issued`) for its write, which marks the spent
    token too."""

    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True
    prefetched: Prefetched | None = None
    issued: dict | None = None

    def authenticate_token_endpoint_client(self):
        return ClientAuthentication(self._query_client)(self.request, self.TOKEN_ENDPOINT_AUTH_METHODS, "token")

    def _query_client(self, client_id: str):
        if error := document_error(client_id):
            raise InvalidClientError(description=safe_description(error))
        client = self.prefetched.client if self.prefetched is not None else None
        return client if client is not None and client.get_client_id() == client_id else None

    def authenticate_refresh_token(self, refresh_token):
        token = self.prefetched.token if self.prefetched is not None else None
        if token is None or token.row.used_at is not None or token.is_revoked() or token.is_expired():
            return None
        return token

    def authenticate_user(self, refresh_token):
        # Authlib only asks that there be one (the tokens issued name no person): read with the token.
        return SimpleNamespace(id=refresh_token.grant.user_id) if refresh_token.user_exists else None

    def save_token(self, token):
        self.issued = token
        tokens.with_granted_details(token, self.request.refresh_token.grant)

    def revoke_old_credential(self, refresh_token):
        pass  # marked spent by the write of the new pair (`tokens.rotate`)

    def validate_token_request(self):
        super().validate_token_request()
        grant = self.request.refresh_token.grant
        scoping.check_same_resource(self.request.payload.datalist.get("resource", []), grant.resource)
        asked = self.request.payload.data.get("authorization_details")
        if asked is not None:
            # RFC 9396 §6: what the grant allows, or less. The grant holds the app's limits, which a
            # newer grant or the dashboard may have changed (their order too, and past ten of them);
            # the new tokens carry the grant's, as the response says.
            held = authorization_details.from_stored(grant.authorization_details)
            if held is None or not authorization_details.covers(
                    held, requested_details(asked, most=max(authorization_details.MAX_DETAILS, len(held)))):
                raise InvalidAuthorizationDetailsError(
                    "A refresh may ask for the authorization details the app holds, or fewer, never more; "
                    "ask for more by authorizing again.")


def requested_details(value: object, *, most: int = authorization_details.MAX_DETAILS) -> tuple | None:
    """The `authorization_details` of a request (None when absent; at most `most`), or
    invalid_authorization_details."""
    if value is None:
        return None
    try:
        return authorization_details.parse(value, most=most)
    except authorization_details.InvalidAuthorizationDetails as exc:
        raise InvalidAuthorizationDetailsError(safe_description(str(exc))) from None
