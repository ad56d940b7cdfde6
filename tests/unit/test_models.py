"""Row defaults shared by every table."""

from datetime import timedelta

from core.base.clock import now
from core.base.db import transaction
from core.models import Account, Product, User


def test_a_new_row_is_last_updated_when_it_was_created(test_settings):
    with transaction() as session:
        user = User(email="t@example.com", password_hash="x")
        session.add(user)
        session.flush()
        account = Account(owner_user_id=user.id)
        session.add(account)
        session.flush()
        product = Product(account_id=account.id, name="P", created=now(), updated=now() + timedelta(seconds=5))
        session.add(product)
        session.flush()
        assert product.updated == product.created


def test_a_row_written_without_the_orm_is_made_as_the_orm_makes_it():
    import uuid

    from core.models import inserted_values, plain
    product = plain(Product)(account_id=uuid.uuid4(), name="P", created=now(), updated=now() + timedelta(seconds=5))
    values = inserted_values(product)
    assert values["updated"] == values["created"] == product.updated == product.created  # what is answered too
