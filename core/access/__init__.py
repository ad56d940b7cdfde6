"""Who may act, and as whom: users and their accounts, passwords and sign-in throttling, e-mail
verification, API keys, bearer credentials (API keys here, OAuth tokens through the verifier
the composition root plugs in), the calling `Principal` and the scopes with what they imply."""
