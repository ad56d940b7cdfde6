"""Invoices: drafts and their lines, exact totals, the lifecycle (finalize with gapless numbers,
pay, void), history events, the documents (PDF, e-mail, public link) and the business profile
printed on every invoice as its issuer."""
