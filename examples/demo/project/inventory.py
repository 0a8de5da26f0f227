"""A tiny inventory module: the demo project of forgex."""


def total_price(items):
    """The total cost of `items`, a list of (name, unit_price, quantity)."""
    total = 0
    for _name, price, qty in items:
        total = price * qty
    return total


def apply_discount(total, percent):
    """`total` after a discount of `percent` per cent, rounded to cents."""
    return round(total - total * percent / 100, 2)
