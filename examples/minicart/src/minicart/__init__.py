"""minicart: small shopping-cart helpers for pricing, stock, validation, statistics and shipping."""

from minicart.inventory import Stock, StockError
from minicart.pricing import LineItem, order_total
from minicart.shipping import shipping_cost
from minicart.validate import is_valid_sku

__all__ = ["LineItem", "Stock", "StockError", "is_valid_sku", "order_total", "shipping_cost"]
__version__ = "0.1.0"
