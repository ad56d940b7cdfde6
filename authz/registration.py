"""Dynamic client registration (RFC 7591), open to anyone: such clients are shown as unverified."""

from __future__ import annotations

from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError
from joserfc.errors import InvalidClaimError

from authz import clients, redirect_uris
from authz.adapter import db
from authz.errors import safe_description
from authz.metadata import authorization_server_metadata
from core.base import crypto

MAX_REDIRECT_URIS = 20


class RegistrationClaims(ClientMetadataClaims):
    """RFC 7591 metadata with this server's redirect URI rules and limits."""

    def validate_redirect_uris(self):
        uris = self.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            raise InvalidRedirectURIError("redirect_uris must list at least one redirect URI.")
        if len(uris) > MAX_REDIRECT_URIS:
            raise InvalidRedirectURIError(f"At most {MAX_REDIRECT_URIS} redirect URIs.")
        for uri in uris:
            if reason := redirect_uris.problem(uri):
                raise InvalidRedirectURIError(safe_description(f"Redirect URI {str(uri)[:200]} {reason}."))

    def validate_grant_types(self):
        self.setdefault("grant_types", list(clients.SUPPORTED_GRANT_TYPES))

    def validate_response_types(self):
        self.setdefault("response_types", list(clients.SUPPORTED_RESPONSE_TYPES))

    def validate_client_name(self):
        self._check_text("client_name", 256)

    def validate_scope(self):
        self._check_text("scope", 1000)

    def validate_client_uri(self):
        self._check_text("client_uri", 2048)
        super().validate_client_uri()

    def _check_text(self, name: str, limit: int) -> None:
        value = self.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise InvalidClaimError(name)


class Registration(ClientRegistrationEndpoint):
    def __init__(self, server=None):
        super().__init__(server, claims_classes=[RegistrationClaims])

    def authenticate_token(self, request):
        return True  # open dynamic registration: such clients are shown as unverified

    def get_server_metadata(self):
        return authorization_server_metadata()

    def generate_client_id(self, request):
        return "cl_" + crypto.random_string(24)

    def generate_client_secret(self, request):
        return crypto.token(32)

    def generate_client_info(self, request):
        info = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method") == "none":
            info.pop("client_secret")  # a public client gets no secret
            info.pop("client_secret_expires_at")
        return info

    def save_client(self, client_info, client_metadata, request):
        return clients.register(db(), client_id=client_info["client_id"],
                                client_secret=client_info.get("client_secret"), metadata=client_metadata)
