"""Names of the customers the growth seeding makes: a word of 8 random-looking letters each, as
varied as real names (identical prefixes on a million rows would make any text index useless)."""

import hashlib


def customer_name(number: int) -> str:
    digest = hashlib.sha256(str(number).encode()).digest()
    return "Client " + "".join(chr(ord("a") + byte % 26) for byte in digest[:8])


def searched_word(number: int) -> str:
    """What a person types to find customer `number`: the distinctive word of its name."""
    return customer_name(number).split()[1]
