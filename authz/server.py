"""The authorization server: Authlib's RFC grant and endpoint classes, wired to our storage.

Authlib has no Starlette integration, so this module adapts: a request is read (async) into an
`HttpInput`, then handled synchronously in a worker thread inside one database transaction whose
session Authlib's callbacks reach through `db()`. Responses are Starlette responses with
`Cache-Control: no-store`. Errors of the OAuth endpoints use the RFC 6749 §5.2 format.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    InvalidClientError,
    InvalidRequestError,
    JsonPayload,
    JsonRequest,
    OAuth2Error,
    OAuth2Payload,
    OAuth2Request,
    UnsupportedResponseTypeError,
    grants,
)
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9207 import IssuerParameter
from joserfc.errors import InvalidClaimError
from sqlmodel import Session
from starlette.datastructures import Headers
from starlette.responses import Response

from authz import clients, redirect_uris, scoping, tokens
from authz.errors import safe_description
from authz.metadata import authorization_server_metadata, issuer
from core import accounts
from core import secrets as secret_tools
from core.models import User
from core.scopes import ALL_SCOPES

MAX_REDIRECT_URIS = 20

# --- per-request context -------------------------------------------------------------------------

_session: ContextVar[Session] = ContextVar("authz_session")
_document_errors: ContextVar[dict[str, str]] = ContextVar("authz_document_errors", default={})


@contextlib.contextmanager
def bound(session: Session, document_errors: dict[str, str] | None = None) -> Iterator[None]:
    """Make `session` (and why metadata documents failed) visible to Authlib's callbacks."""
    session_token = _session.set(session)
    errors_token = _document_errors.set(document_errors or {})
    try:
        yield
    finally:
        _session.reset(session_token)
        _document_errors.reset(errors_token)


def db() -> Session:
    return _session.get()


# --- requests and responses ----------------------------------------------------------------------


@dataclass(frozen=True)
class HttpInput:
    """What Authlib needs of an HTTP request, read up front (bodies are read asynchronously)."""

    method: str
    url: str
    headers: Headers
    params: list[tuple[str, str]] = field(default_factory=list)  # query (authorize) or form
    json: object = None


class _Payload(OAuth2Payload):
    def __init__(self, params: list[tuple[str, str]]) -> None:
        self._datalist: defaultdict[str, list] = defaultdict(list)
        for name, value in params:
            self._datalist[name].append(value)
        self._data = {name: values[0] for name, values in self._datalist.items()}

    @property
    def data(self) -> dict:
        return self._data

    @property
    def datalist(self) -> defaultdict[str, list]:
        return self._datalist


class HttpOAuth2Request(OAuth2Request):
    def __init__(self, http: HttpInput) -> None:
        # Authlib refuses non-https URIs here; whether the origin uses TLS is the deployment's
        # decision (INVOICING_ORIGIN), and development and tests serve plain http.
        super().__init__(http.method, "https://" + http.url.split("://", 1)[-1], headers=http.headers)
        self.payload = _Payload(http.params)
        self.resource: str | None = None
        self.requested_scopes: list[str] = []
        self.granted_scopes: list[str] = []

    @property
    def args(self) -> dict:
        return self.payload.data

    @property
    def form(self) -> dict:
        return self.payload.data


class _JsonBody(JsonPayload):
    def __init__(self, body: object) -> None:
        self._body = body if isinstance(body, dict) else {}

    @property
    def data(self) -> dict:
        return self._body


class HttpJsonRequest(JsonRequest):
    def __init__(self, http: HttpInput) -> None:
        super().__init__(http.method, http.url, http.headers)
        self.payload = _JsonBody(http.json)


class OAuthResponse(Response):
    """A Starlette response with the `location` attribute Authlib's RFC 9207 hook edits."""

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value


# --- PKCE, grants and endpoints --------------------------------------------------------------------


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
            request.requested_scopes = scoping.requested_scopes(request.resource, request.payload.scope)
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
            account_id=accounts.account_of(db(), user).id, redirect_uri=request.payload.redirect_uri,
            scopes=request.granted_scopes, resource=request.resource,
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
    TOKEN_ENDPOINT_AUTH_METHODS = TOKEN_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        return tokens.refresh_token_for_use(db(), refresh_token)

    def authenticate_user(self, refresh_token):
        return db().get(User, refresh_token.grant.user_id)

    def revoke_old_credential(self, refresh_token):
        tokens.mark_rotated(db(), refresh_token)

    def validate_token_request(self):
        super().validate_token_request()
        scoping.check_same_resource(self.request.payload.datalist.get("resource", []),
                                    self.request.refresh_token.grant.resource)


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
        return "cl_" + secret_tools.random_string(24)

    def generate_client_secret(self, request):
        return secret_tools.token(32)

    def generate_client_info(self, request):
        info = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method") == "none":
            info.pop("client_secret")  # a public client gets no secret
            info.pop("client_secret_expires_at")
        return info

    def save_client(self, client_info, client_metadata, request):
        return clients.register(db(), client_id=client_info["client_id"],
                                client_secret=client_info.get("client_secret"), metadata=client_metadata)


class Issuer(IssuerParameter):
    def get_issuer(self) -> str:
        return issuer()


# --- the server ----------------------------------------------------------------------------------


class OAuthServer(AuthorizationServer):
    def __init__(self) -> None:
        super().__init__(scopes_supported=list(ALL_SCOPES))
        lifetime = int(tokens.ACCESS_TOKEN_LIFETIME.total_seconds())
        self.register_token_generator(
            "default", BearerTokenGenerator(tokens.new_access_token, tokens.new_refresh_token, lifetime))
        self.register_grant(CodeGrant, [PkceS256(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
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
        if error := _document_errors.get().get(client_id):
            raise InvalidClientError(description=safe_description(error))
        return clients.find(db(), client_id)

    def save_token(self, token, request):
        if isinstance(request.refresh_token, tokens.StoredToken):
            grant = request.refresh_token.grant
        else:
            grant = tokens.start_grant(db(), request.authorization_code)
        tokens.store_pair(db(), grant, token)

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
