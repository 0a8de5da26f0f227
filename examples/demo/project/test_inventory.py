import unittest

from inventory import apply_discount, total_price


class TotalPriceTest(unittest.TestCase):
    def test_empty_order_costs_nothing(self):
        self.assertEqual(total_price([]), 0)

    def test_single_item(self):
        self.assertEqual(total_price([("pen", 2, 3)]), 6)

    def test_sums_every_item(self):
        self.assertEqual(total_price([("pen", 2, 3), ("pad", 5, 1), ("ink", 1, 4)]), 15)


class DiscountTest(unittest.TestCase):
    def test_ten_percent(self):
        self.assertEqual(apply_discount(15, 10), 13.5)


if __name__ == "__main__":
    unittest.main()
