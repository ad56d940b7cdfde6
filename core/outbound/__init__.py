"""Talking to the outside world safely: HTTP requests that only reach public addresses
(`netguard`, against SSRF and DNS rebinding) and e-mail over SMTP or to an outbox folder."""
