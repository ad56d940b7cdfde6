"""Standard Webhooks signatures, checked against the reference library."""

import base64
import secrets
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from core.webhooks.signing import sign


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def headers(msg_id: str, timestamp: int, signature: str) -> dict[str, str]:
    return {"webhook-id": msg_id, "webhook-timestamp": str(timestamp), "webhook-signature": signature}


def test_signature_verifies_with_the_standardwebhooks_library():
    secret, now = new_secret(), int(time.time())
    body = b'{"id":"3f1c","type":"invoice.paid","data":{"object":{"total":250000}}}'
    signature = sign(secret, "3f1c", now, body)
    assert Webhook(secret).verify(body, headers("3f1c", now, signature)) is not None


def test_signature_has_the_v1_prefix_and_a_base64_sha256_digest():
    signature = sign(new_secret(), "id", 1, b"{}")
    version, digest = signature.split(",", 1)
    assert version == "v1"
    assert len(base64.b64decode(digest)) == 32


def test_known_vector_from_the_standard_webhooks_specification():
    # The example in the Standard Webhooks specification's README.
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"test": 2432232314}'
    assert sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) == \
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret"])
def test_any_change_breaks_the_signature(tamper):
    secret, now = new_secret(), int(time.time())
    signature = sign(secret, "msg", now, b"{}")
    body, msg_id, timestamp, verify_secret = b"{}", "msg", now, secret
    if tamper == "body":
        body = b'{"x":1}'
    elif tamper == "id":
        msg_id = "other"
    elif tamper == "timestamp":
        timestamp = now - 1
    else:
        verify_secret = new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(verify_secret).verify(body, headers(msg_id, timestamp, signature))
