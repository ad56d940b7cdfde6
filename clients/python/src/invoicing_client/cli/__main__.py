"""`python -m invoicing_client.cli`, the same as `invoicing-cli`."""

from invoicing_client.cli.main import main

main()
