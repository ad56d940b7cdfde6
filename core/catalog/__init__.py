"""What a business bills and to whom: customers (archived rather than deleted), products and
their prices."""
