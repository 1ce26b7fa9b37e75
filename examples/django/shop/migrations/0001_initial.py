"""The Order table, with snowflake_nextval() as the default of its key.

Django 3.2 has no database defaults in models: BigAutoField makes a bigserial
column (an identity column from Django 4.1 on), and RunSQL gives it
snowflake_nextval() as its default instead, after dropping the identity or
the sequence that bigserial made.  Django still leaves the key out of its
INSERTs and reads it back with RETURNING, as for any AutoField.
"""
from django.contrib.postgres.operations import CreateExtension
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        CreateExtension("snowflake"),
        migrations.CreateModel(
            name="Order",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("customer", models.TextField()),
            ],
        ),
        # readme:django-migration
        migrations.RunSQL(
            [
                "ALTER TABLE shop_order ALTER COLUMN id DROP IDENTITY IF EXISTS",
                "ALTER TABLE shop_order ALTER COLUMN id SET DEFAULT snowflake_nextval()",
                "DROP SEQUENCE IF EXISTS shop_order_id_seq",
            ],
            reverse_sql=migrations.RunSQL.noop,  # dropping the table undoes it
        ),
        # end
    ]
