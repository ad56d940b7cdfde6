"""The authorization server: Authlib's `AuthorizationServer` wired to our storage, with the grants
of `authz.grants`, revocation (RFC 7009), registration (RFC 7591) and `iss` on redirects (RFC 9207).
Responses carry `Cache-Control: no-store`; errors of the OAuth endpoints use the RFC 6749 §5.2 format.
"""

from __future__ import annotations

import json

from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    InvalidClientError,
    InvalidRequestError,
    OAuth2Request,
    UnsupportedResponseTypeError,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from authlib.oauth2.rfc9207 import IssuerParameter

from authz import clients, connected_apps, tokens
from authz.adapter import HttpJsonRequest, HttpOAuth2Request, OAuthResponse, db, document_error
from authz.errors import safe_description
from authz.grants import TOKEN_AUTH_METHODS, CodeGrant, PkceS256, RefreshGrant
from authz.metadata import issuer
from authz.registration import Registration
from core.access.scopes import ALL_SCOPES


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = TOKEN_AUTH_METHODS

    def check_params(self, request, client):
        # token_type_hint is only a hint (RFC 7009 §2.1): every token is looked up by its hash.
        if not request.form.get("token"):
            raise InvalidRequestError("Missing token.")

    def query_token(self, token_string, token_type_hint):
        return tokens.find(db(), token_string)

    def revoke_token(self, token, request):
        tokens.revoke_token(db(), token)


class Introspection(IntrospectionEndpoint):
    """RFC 7662: a client learns what its own tokens allow, authorization details included."""

    CLIENT_AUTH_METHODS = TOKEN_AUTH_METHODS

    def query_token(self, token_string, token_type_hint):
        return tokens.find(db(), token_string)

    def check_permission(self, token, client, request):
        return token.check_client(client)

    def introspect_token(self, token):
        grant = token.grant
        payload = {"active": True, "scope": token.get_scope(), "client_id": grant.client_id,
                   "token_type": "refresh_token" if token.is_refresh_token else "Bearer",
                   "exp": int(token.row.expires_at.timestamp()), "iat": int(token.row.created_at.timestamp()),
                   "sub": str(grant.user_id), "aud": grant.resource, "iss": issuer()}
        if grant.authorization_details is not None:
            payload["authorization_details"] = grant.authorization_details
        return payload


class Issuer(IssuerParameter):
    def get_issuer(self) -> str:
        return issuer()


class OAuthServer(AuthorizationServer):
    def __init__(self) -> None:
        super().__init__(scopes_supported=list(ALL_SCOPES))
        lifetime = int(tokens.ACCESS_TOKEN_LIFETIME.total_seconds())
        self.register_token_generator(
            "default", BearerTokenGenerator(tokens.new_access_token, tokens.new_refresh_token, lifetime))
        self.register_grant(CodeGrant, [PkceS256(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Introspection)
        self.register_endpoint(Registration)
        self.issuer_parameter = Issuer()
        self.register_extension(self.issuer_parameter)

    def get_authorization_grant(self, request):
        if request.payload.response_type == "code":
            return super().get_authorization_grant(request)
        # Authlib's version echoes response_type into the error description (which must be plain
        # ASCII); the redirect is trusted only for a known client and a registered redirect URI.
        client = self.query_client(request.payload.client_id) if request.payload.client_id else None
        redirect_uri = None
        if client is not None:
            requested = request.payload.redirect_uri
            if requested is None:
                redirect_uri = client.get_default_redirect_uri()
            elif client.check_redirect_uri(requested):
                redirect_uri = requested
        raise UnsupportedResponseTypeError(safe_description(str(request.payload.response_type), 50),
                                           description="Only response_type=code is supported.",
                                           redirect_uri=redirect_uri)

    def query_client(self, client_id):
        if error := document_error(client_id):
            raise InvalidClientError(description=safe_description(error))
        return clients.find(db(), client_id)

    def save_token(self, token, request):
        # The code grant's (a refresh keeps its pair for `authz.refreshing` to write: RefreshGrant).
        grant = tokens.start_grant(db(), request.authorization_code)
        connected_apps.adopt_limits(db(), grant)  # its limits become the app's
        tokens.store_pair(db(), grant, token)
        tokens.with_granted_details(token, grant)

    def validate_requested_scope(self, scope):
        pass  # which scopes a request may carry depends on its resource: CodeGrant decides

    def create_oauth2_request(self, request):
        return request if isinstance(request, OAuth2Request) else HttpOAuth2Request(request)

    def create_json_request(self, request):
        return HttpJsonRequest(request)

    def handle_response(self, status, body, headers):
        content = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
        response = OAuthResponse(content, status_code=status, headers=dict(headers))
        response.headers["Cache-Control"] = "no-store"
        return response

    def send_signal(self, name, *args, **kwargs):
        pass

    def error_redirect(self, request: OAuth2Request, error) -> OAuthResponse:
        """An authorization error sent back to the (trusted) redirect URI, with `iss`."""
        response = self.handle_error_response(request, error)
        self.issuer_parameter.add_issuer_parameter(self, response)
        return response


server = OAuthServer()
