"""Django and snowflake ids, through Django's test runner: create() returns
the id the database gave, bulk_create() sets every object's id, and the
column's default is snowflake_nextval() with no sequence left behind."""
from django.db import connection
from django.test import TestCase

from .models import Order


class SnowflakeIdTests(TestCase):
    def server_text(self, order_id):
        with connection.cursor() as cursor:
            cursor.execute("SELECT id::text FROM shop_order WHERE id = %s", [order_id])
            row = cursor.fetchone()
        return row and row[0]

    def test_create_returns_the_id(self):
        # readme:django-create
        order = Order.objects.create(customer="ada")
        order.id  # 253918188092289024: the database's default, read back by RETURNING
        # end
        self.assertIsInstance(order.id, int)
        self.assertGreater(order.id, 2**53)
        self.assertEqual(self.server_text(order.id), str(order.id))
        self.assertEqual(Order.objects.get(pk=order.id).customer, "ada")

    def test_bulk_create_sets_every_id(self):
        first = Order.objects.create(customer="first")
        # readme:django-bulk
        orders = Order.objects.bulk_create([Order(customer=f"customer {i}") for i in range(500)])
        # end
        ids = [order.id for order in orders]
        self.assertTrue(all(isinstance(i, int) for i in ids), "an object has no id")
        self.assertEqual(ids, sorted(set(ids)), "ids not increasing in the order given")
        self.assertGreater(ids[0], first.id)
        stored = Order.objects.exclude(pk=first.pk).order_by("id").values_list("id", flat=True)
        self.assertEqual(list(stored), ids)
        for order in orders[::50]:
            self.assertEqual(self.server_text(order.id), str(order.id))

    def test_default_is_snowflake_nextval(self):
        with connection.cursor() as cursor:
            cursor.execute("""
                SELECT column_default, pg_get_serial_sequence('shop_order', 'id')
                  FROM information_schema.columns
                 WHERE table_name = 'shop_order' AND column_name = 'id'""")
            self.assertEqual(cursor.fetchone(), ("snowflake_nextval()", None))
