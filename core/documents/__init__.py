"""An invoice or a credit note as structured e-invoices under EN 16931: Peppol BIS Billing 3.0 (UBL),
UN/CEFACT CII and Factur-X (the PDF with the CII inside). `en16931` maps either to the standard's
business terms once; one module per format writes them."""
